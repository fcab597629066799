//go:build integration

package deploy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The unit's sandboxing must leave the agent what egress control needs (docs/egress.md): CAP_NET_ADMIN and
// netlink sockets for the host firewall, the host's network for the proxy on the bridges' gateways. The file
// is read as written; where systemd-analyze is installed, systemd itself reads it too.
var _ = Describe("the systemd unit", Ordered, ContinueOnFailure, func() {
	unitPath := filepath.Join(repoRoot, "config", "systemd", "dockside-agent.service")
	var unit string
	var service map[string][]string

	BeforeAll(func() {
		data, err := os.ReadFile(unitPath)
		Expect(err).NotTo(HaveOccurred())
		unit = string(data)
		service = unitSection(unit, "Service")
		Expect(service).To(HaveKey("ExecStart"))
	})

	// CAP_KILL signals the Sandboxes' processes from the host (docs/design/decisions/0025-signals-from-the-host.md).
	It("gives the agent CAP_NET_ADMIN and CAP_KILL and no other capability, and the host's processes", func() {
		Expect(service["DynamicUser"]).To(Equal([]string{"yes"}))
		Expect(service["CapabilityBoundingSet"]).To(Equal([]string{"CAP_NET_ADMIN CAP_KILL"}))
		// The dynamic user is not root: only an ambient capability survives the exec.
		Expect(service["AmbientCapabilities"]).To(Equal([]string{"CAP_NET_ADMIN CAP_KILL"}))
		Expect(service).NotTo(HaveKey("PrivatePIDs"))
		Expect(service).NotTo(HaveKey("ProtectProc"))
		Expect(service["NoNewPrivileges"]).To(Equal([]string{"yes"}))
	})

	It("lets it open netlink sockets, and no other new kind", func() {
		Expect(service["RestrictAddressFamilies"]).To(HaveLen(1))
		Expect(strings.Fields(service["RestrictAddressFamilies"][0])).To(ConsistOf("AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"))
	})

	It("shares the host's network, where the bridges' gateways are", func() {
		for _, key := range []string{"PrivateNetwork", "NetworkNamespacePath", "JoinsNamespaceOf", "IPAddressDeny"} {
			Expect(service).NotTo(HaveKey(key))
		}
	})

	It("serves the egress proxy on port 3128, with the host firewall on", func() {
		args := strings.Fields(service["ExecStart"][0])
		Expect(args).To(ContainElement("--egress-proxy-port=3128"))
		Expect(args).NotTo(ContainElement(HavePrefix("--host-firewall")), "the firewall is on by default")
	})

	Context("read by systemd-analyze", func() {
		BeforeEach(func() {
			if _, err := exec.LookPath("systemd-analyze"); err != nil {
				Skip("systemd-analyze is not installed")
			}
		})

		// verify wants the binary at its place, so a copy of the unit runs this test's own executable instead.
		It("has no error or warning", func() {
			self, err := os.Executable()
			Expect(err).NotTo(HaveOccurred())
			copied := filepath.Join(GinkgoT().TempDir(), "dockside-agent.service")
			Expect(os.WriteFile(copied, []byte(strings.ReplaceAll(unit, "/usr/local/bin/dockside-agent", self)), 0o644)).To(Succeed())
			out, err := exec.Command("systemd-analyze", "verify", copied).CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			Expect(string(out)).To(BeEmpty())
		})

		// Every protection systemd knows is on, except these. Adding CAP_NET_ADMIN and AF_NETLINK opened
		// exactly three (the first three); anything else opening fails here.
		It("leaves open only the protections the agent needs open", func() {
			needed := map[string]string{
				"CapabilityBoundingSet_CAP_NET_ADMIN":   "the host firewall table is installed over netlink",
				"CapabilityBoundingSet_CAP_KILL":        "signals to Sandbox processes of other users (decision 0025)",
				"AmbientCapabilities":                   "CAP_NET_ADMIN and CAP_KILL for a user that is not root",
				"RestrictAddressFamilies_AF_NETLINK":    "nftables, and the host's interfaces and addresses",
				"RestrictAddressFamilies_AF_INET_INET6": "the API server, the egress proxy and metrics",
				"RestrictAddressFamilies_AF_UNIX":       "the Docker socket",
				"SupplementaryGroups":                   "the docker group, which owns the socket",
				"PrivateNetwork":                        "the proxy listens on the bridges' gateways, host addresses",
				"IPAddressDeny":                         "the proxy connects where the sandboxes' lists allow",
				"PrivateUsers":                          "the docker group and CAP_NET_ADMIN must count on the host",
				"DeviceAllow":                           "ProtectClock's read access to the clock device",
				// Open before egress control, and not needed for it.
				"ProtectProc":              "",
				"ProcSubset":               "",
				"PrivateMounts":            "",
				"RootDirectoryOrRootImage": "",
			}
			out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "--json=short", unitPath).Output()
			Expect(err).NotTo(HaveOccurred())
			var checks []struct {
				Set       bool   `json:"set"`
				JSONField string `json:"json_field"`
			}
			Expect(json.Unmarshal(out, &checks)).To(Succeed())
			open := map[string]bool{}
			for _, c := range checks {
				if !c.Set {
					open[c.JSONField] = true
					Expect(needed).To(HaveKey(c.JSONField), "the unit leaves %s open", c.JSONField)
				}
			}
			for _, key := range []string{"CapabilityBoundingSet_CAP_NET_ADMIN", "AmbientCapabilities", "RestrictAddressFamilies_AF_NETLINK"} {
				Expect(open).To(HaveKey(key), "systemd-analyze finds %s closed", key)
			}
		})

		// The calls of netlink as the nftables library and Go's interface listing make them.
		It("lets through the system calls that netlink needs", func() {
			allowed := syscallFilter(service["SystemCallFilter"])
			var blocked []string
			for _, call := range []string{"socket", "bind", "getsockname", "setsockopt", "getsockopt", "sendmsg", "recvmsg", "sendto", "recvfrom"} {
				if !allowed[call] {
					blocked = append(blocked, call)
				}
			}
			Expect(blocked).To(BeEmpty(), "SystemCallFilter blocks these")
			// And the exclusions were read: chroot is @privileged, setrlimit @resources.
			Expect(allowed).NotTo(HaveKey("chroot"))
			Expect(allowed).NotTo(HaveKey("setrlimit"))
		})
	})
})

// unitSection is one section of a unit file: each key's values in order, continuation lines joined, comments
// left out.
func unitSection(unit, section string) map[string][]string {
	unit = strings.ReplaceAll(unit, "\\\n", " ")
	keys := map[string][]string{}
	in := false
	for _, line := range strings.Split(unit, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			in = line == "["+section+"]"
		case in:
			key, value, _ := strings.Cut(line, "=")
			keys[key] = append(keys[key], strings.TrimSpace(value))
		}
	}
	return keys
}

// syscallFilter is the set of system calls that the unit's SystemCallFilter lines allow: the union of the
// allow lists less what the "~" lines deny, as systemd applies them when the first line is an allow list.
func syscallFilter(lines []string) map[string]bool {
	Expect(lines).NotTo(BeEmpty())
	Expect(lines[0]).NotTo(HavePrefix("~"), "the filter starts with a deny list")
	allowed := map[string]bool{}
	for _, line := range lines {
		deny := strings.HasPrefix(line, "~")
		for _, name := range strings.Fields(strings.TrimPrefix(line, "~")) {
			for call := range syscallSet(name, map[string]bool{}) {
				allowed[call] = !deny
			}
		}
	}
	for call, ok := range allowed {
		if !ok {
			delete(allowed, call)
		}
	}
	return allowed
}

// syscallSet expands a system call or an @set, through systemd-analyze, into system calls.
func syscallSet(name string, seen map[string]bool) map[string]bool {
	calls := map[string]bool{}
	if !strings.HasPrefix(name, "@") {
		calls[name] = true
		return calls
	}
	if seen[name] {
		return calls
	}
	seen[name] = true
	var out bytes.Buffer
	cmd := exec.Command("systemd-analyze", "syscall-filter", "--no-pager", name)
	cmd.Stdout = &out
	Expect(cmd.Run()).To(Succeed(), "systemd-analyze syscall-filter %s", name)
	// The first line names the set; members follow indented, one a line, after a "#" description.
	for _, m := range regexp.MustCompile(`(?m)^\s+([@\w-]+)\s*$`).FindAllStringSubmatch(out.String(), -1) {
		for call := range syscallSet(m[1], seen) {
			calls[call] = true
		}
	}
	Expect(calls).NotTo(BeEmpty(), "systemd-analyze syscall-filter %s: %s", name, out.String())
	return calls
}
