//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/owndockerd"
)

// gvisorTopologyPool is the range of the gVisor agent's bridges (owndockerd's AgentFlags say why it is its own).
const gvisorTopologyPool = "10.222.0.0/24"

// kernelProbe reports, one line each, which kernel answers the sandbox's system calls and what the sandbox user
// may do: the release uname reports, whether syslog(2) may be read (dmesg: runc's seccomp profile refuses it
// without CAP_SYSLOG; gVisor answers from a log of its own), who it is, whether / takes a write and how it is
// mounted, which network interfaces it has, and the memory it is told it has.
const kernelProbe = `
echo "release=$(uname -r)"
if out=$(dmesg 2>&1); then echo "dmesg: $(echo "$out" | head -n 1)"; else echo "dmesg refused: $out"; fi
echo "uid=$(id -u) gid=$(id -g)"
touch /written 2>/tmp/err && echo "root: written" || echo "root: $(cat /tmp/err)"
echo "root mount: $(awk '$2 == "/" {print $4}' /proc/mounts | cut -d, -f1)"
echo "interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
echo "$(grep MemTotal /proc/meminfo)"
echo kept > /workspace/f && echo "workspace: writable"
`

var _ = Describe("Sandboxes under gVisor on a Docker daemon with runsc registered", func() {
	It("answers a Sandbox's system calls with gVisor's kernel, and keeps its containment", func() {
		if _, err := owndockerd.GVisorInstalled(); err != nil {
			Skip("gVisor's runsc is not installed (apt-get install runsc, Debian's package): " + err.Error())
		}
		Expect(owndockerd.ReapLeftovers(GinkgoWriter.Printf)).To(Succeed())
		daemon, err := owndockerd.StartGVisor("gvs", ownDaemonImages...)
		Expect(err).NotTo(HaveOccurred())
		d := &ownDaemon{daemon}
		DeferCleanup(d.remove)
		ownNode := node + "-gvs"
		startOwnAgent(d, ownNode, gvisorTopologyPool)
		hostRelease, err := d.docker("info", "-f", "{{.KernelVersion}}")
		Expect(err).NotTo(HaveOccurred())

		ns := newNamespace("gvisor")
		var manifest strings.Builder
		for _, rt := range dsv1alpha1.Runtimes {
			fmt.Fprintf(&manifest, `---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: probe-%s
spec:
  nodeName: %s
  runtime: %s
  image: dockside.dev/busybox:local
  command: ["sh", "-c"]
  args:
    - |%s
  resources: {memory: 64Mi, pids: 128}
  workspace: {size: 16Mi}
`, strings.ToLower(string(rt)), ownNode, rt, indent(kernelProbe, "      "))
		}
		apply(ns, manifest.String())

		outputs := map[dsv1alpha1.Runtime]string{}
		for _, rt := range dsv1alpha1.Runtimes {
			name := "sandbox/probe-" + strings.ToLower(string(rt))
			// A probe that fails ends at once and says why; kubectl wait would wait out its timeout for Succeeded.
			var phase string
			Eventually(func() string {
				phase = field(ns, name, "{.status.phase}")
				return phase
			}, 3*time.Minute, time.Second).Should(BeElementOf("Succeeded", "Failed"),
				func() string { return name + ": " + field(ns, name, "{.status}") })
			outputs[rt] = field(ns, name, "{.status.result.outputTail}")
			GinkgoWriter.Printf("---- %s ----\n%s\n", rt, outputs[rt])
			Expect(phase).To(Equal("Succeeded"), "%s: %s\noutput:\n%s", name,
				field(ns, name, "{.status.conditions}"), outputs[rt])
		}
		gvisor, runc := outputs[dsv1alpha1.RuntimeGVisor], outputs[dsv1alpha1.RuntimeRunc]

		By("runc: the host's kernel answers, and refuses syslog to a process without CAP_SYSLOG")
		Expect(runc).To(ContainSubstring("release=" + hostRelease + "\n"))
		Expect(runc).To(MatchRegexp(`dmesg refused: .*Operation not permitted`))

		By("gVisor: its own kernel answers uname and syslog, which runc's seccomp profile refuses")
		Expect(gvisor).NotTo(ContainSubstring("release=" + hostRelease + "\n"))
		Expect(gvisor).To(MatchRegexp(`dmesg: .*gVisor`), "gVisor's kernel log starts by naming it")

		By("both: non-root, read-only root, a workspace, no network interface but loopback")
		// gVisor checks the non-root user's permission on / before the mount's read-only flag: its refusal of the
		// write is "Permission denied" where Linux says "Read-only file system"; the mount is read-only in both.
		for rt, out := range outputs {
			Expect(out).To(ContainSubstring("uid=65532 gid=65532"), rt)
			Expect(out).To(ContainSubstring("root: touch: /written: "), rt)
			Expect(out).To(ContainSubstring("root mount: ro\n"), rt)
			Expect(out).To(ContainSubstring("workspace: writable"), rt)
			Expect(out).To(ContainSubstring("interfaces: lo \n"), rt)
		}
		Expect(gvisor).To(MatchRegexp(`MemTotal: +65536 kB`), "gVisor's kernel is given the memory limit as its memory")

		By("Docker ran the gVisor one under runsc, with the limits and network of any Sandbox, and room for gVisor's threads")
		ids, err := d.docker("container", "ls", "-aq", "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
			"--filter", "label="+dsv1alpha1.LabelRole+"="+dsv1alpha1.RolePrimary)
		Expect(err).NotTo(HaveOccurred())
		seen := map[string]string{}
		for _, id := range strings.Fields(ids) {
			out, err := d.docker("inspect", "-f", "{{.HostConfig.Runtime}} {{.HostConfig.ReadonlyRootfs}} "+
				"{{.HostConfig.NetworkMode}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{.Config.User}}", id)
			Expect(err).NotTo(HaveOccurred())
			rt, rest, _ := strings.Cut(out, " ")
			seen[rt] = rest
		}
		// Under gVisor the host's pids limit holds gVisor's threads besides the Sandbox's 128 (docs/security.md).
		want := func(pids int) string { return fmt.Sprintf("true none %d %d 65532:65532", 64<<20, pids) }
		Expect(seen).To(Equal(map[string]string{owndockerd.GVisorRuntime: want(2*128 + 128), "runc": want(128)}))

		By("a gVisor session pauses and resumes, and refuses an Execution, whose leftovers it could not find")
		apply(ns, fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: session\n"+
			"spec:\n  nodeName: %s\n  runtime: gVisor\n  image: dockside.dev/busybox:local\n", ownNode))
		waitFor(ns, "sandbox/session", "condition=Ready", 3*time.Minute)
		_, err = kubectl("patch", "-n", ns, "sandbox/session", "--type=merge", "-p", `{"spec":{"lifecycle":"Paused"}}`)
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/session", "condition=Paused", time.Minute)
		_, err = kubectl("patch", "-n", ns, "sandbox/session", "--type=merge", "-p", `{"spec":{"lifecycle":"Running"}}`)
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/session", "condition=Ready", time.Minute)
		apply(ns, execution("refused", "session", "echo ran > /workspace/ran"))
		waitFor(ns, "execution/refused", "jsonpath={.status.phase}=Failed", time.Minute)
		Expect(field(ns, "execution/refused", "{.status.message}")).To(And(
			ContainSubstring("the command is refused"), ContainSubstring("(gVisor)")))
		Expect(field(ns, "sandbox/session", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))

		_, err = kubectl("delete", "-n", ns, "sandboxes", "--all", "--timeout=90s")
		Expect(err).NotTo(HaveOccurred())
		Expect(d.leftovers(ownNode)).To(BeEmpty())
	})
})
