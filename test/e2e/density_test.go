//go:build e2e

package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// The density spec's population: sessions without services (half None, half Isolated) and sessions with the
// one service web (half each again), 60 in all, which is enough for every check below and keeps the spec to a
// few minutes of CI. The full-size run (200 and 40, more bridges than Docker's default pools hold) with its
// time and memory figures is BenchmarkDensity in make bench.
const (
	soloPerMode = 24
	pairPerMode = 6
)

// densityService is the service of the spec's topologies. Its readiness check is the one of webService, but
// unhurried: every check is a docker exec, and a dozen services checked every second would load the daemon
// on two cores more than the Sandboxes themselves do.
const densityService = `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata:
  name: web
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "echo ok > /tmp/index.html && exec httpd -f -p 8080 -h /tmp"]
  readiness:
    command: ["wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/"]
    periodSeconds: 10
    timeoutSeconds: 10
    failureThreshold: 12
`

var _ = Describe("Density", Label("density"), func() {
	It(fmt.Sprintf("runs %d Sandboxes without services and %d with one at once on one host, each reachable only as designed, and leaves nothing",
		2*soloPerMode, 2*pairPerMode), func() {
		ns := newNamespace("density")
		DeferCleanup(func() { _, _ = kubectl("delete", "sandboxes,sandboxservices", "--all", "-n", ns, "--timeout=300s") })
		names := densityNames()

		start := time.Now()
		apply(ns, densityService)
		apply(ns, densityManifests())
		Eventually(notReady(ns, names)).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(BeEmpty())
		allReady := time.Since(start)

		By("every primary running in Docker")
		Expect(runningPrimaries(ns)).To(ConsistOf(names))

		By("each topology with a service on a subnet of its own from the agent's pool, none for the others")
		expectPoolSubnets(ns, 2*pairPerMode)

		By("a None Sandbox without services has no network at all")
		Expect(docker("inspect", "-f", "{{.HostConfig.NetworkMode}}", onlyContainer(ns, "solo-none-000", "primary"))).To(Equal("none"))

		By("a None topology with a service reaches its service by name, on an internal bridge, and not another topology's")
		expectOwnServiceOnly(ns, "pair-none-00", "pair-none-01", "true")

		By("an Isolated topology with a service reaches its service, and not another topology's, on an internal bridge too")
		expectOwnServiceOnly(ns, "pair-iso-00", "pair-iso-01", "true")

		By("Isolated Sandboxes without services share the node's bridge, on which they cannot reach each other")
		expectSharedBridgeIsolation(ns, "solo-iso-000", "solo-iso-001")

		By("deleting every Sandbox")
		deleteStart := time.Now()
		_, err := kubectl("delete", "sandboxes", "--all", "-n", ns, "--timeout=300s")
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("density", fmt.Sprintf("%d Sandboxes all Ready %s after apply, deleted in %s", len(names),
			allReady.Round(time.Second), time.Since(deleteStart).Round(time.Second)), ReportEntryVisibilityAlways)
		_, err = kubectl("delete", "sandboxservice", "web", "-n", ns, "--timeout=60s")
		Expect(err).NotTo(HaveOccurred())
		Expect(namespaceLeftovers(ns)).To(BeEmpty())
		Eventually(func() (string, error) {
			return docker("network", "ls", "-q", "--filter", "name=^"+dd.NodeIsolatedNetworkName(node)+"$")
		}).WithTimeout(time.Minute).Should(BeEmpty(), "the last Sandbox on the shared bridge removes it")
	})
})

// densityNames are the names of the spec's Sandboxes.
func densityNames() []string {
	var names []string
	for i := range soloPerMode {
		names = append(names, fmt.Sprintf("solo-none-%03d", i), fmt.Sprintf("solo-iso-%03d", i))
	}
	for i := range pairPerMode {
		names = append(names, fmt.Sprintf("pair-none-%02d", i), fmt.Sprintf("pair-iso-%02d", i))
	}
	return names
}

// densityManifests is one multi-document manifest of every Sandbox of the spec, applied at once as a GitOps
// tool would; the agent's workers bound how many it converges at a time.
func densityManifests() string {
	var b strings.Builder
	for _, name := range densityNames() {
		mode := "None"
		if strings.Contains(name, "-iso-") {
			mode = "Isolated"
		}
		fmt.Fprintf(&b, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: %s\nspec:\n  image: dockside.dev/busybox:local\n  network:\n    mode: %s\n", name, mode)
		if strings.HasPrefix(name, "pair-") {
			b.WriteString("  services: [\"web\"]\n")
		}
	}
	return b.String()
}

// notReady polls which of names are not (yet) Ready, each with what its Ready condition says.
func notReady(ns string, names []string) func() ([]string, error) {
	return func() ([]string, error) {
		out, err := kubectl("get", "sandboxes", "-n", ns, "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}{"\n"}{end}`)
		if err != nil {
			return nil, err
		}
		ready := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			name, state, _ := strings.Cut(line, "=")
			ready[name] = state
		}
		var waiting []string
		for _, name := range names {
			if state := ready[name]; !strings.HasPrefix(state, "True/") {
				waiting = append(waiting, name+"="+state)
			}
		}
		return waiting, nil
	}
}

// runningPrimaries lists the Sandbox names of the running primaries Docker holds in ns.
func runningPrimaries(ns string) []string {
	GinkgoHelper()
	out, err := docker("container", "ls", "--filter", "status=running",
		"--filter", "label="+dsv1alpha1.LabelNode+"="+node, "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
		"--filter", "label="+dsv1alpha1.LabelRole+"="+dsv1alpha1.RolePrimary,
		"--format", `{{.Label "`+dsv1alpha1.LabelName+`"}}`)
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(out)
}

// expectPoolSubnets checks that ns holds exactly want topology networks, each on its own subnet of the
// agent's default pool, recorded in its label.
func expectPoolSubnets(ns string, want int) {
	GinkgoHelper()
	ids, err := docker("network", "ls", "-q", "--filter", "label="+dsv1alpha1.LabelNode+"="+node,
		"--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns, "--filter", "label="+dsv1alpha1.LabelRole+"="+dsv1alpha1.RoleNetwork)
	Expect(err).NotTo(HaveOccurred())
	Expect(strings.Fields(ids)).To(HaveLen(want))
	out, err := docker(append([]string{"network", "inspect", "-f",
		`{{index .Labels "` + dsv1alpha1.LabelSubnet + `"}} {{range .IPAM.Config}}{{.Subnet}}{{end}}`}, strings.Fields(ids)...)...)
	Expect(err).NotTo(HaveOccurred())
	pool := netip.MustParsePrefix("10.120.0.0/16")
	seen := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		label, subnet, _ := strings.Cut(line, " ")
		Expect(subnet).To(Equal(label), "the label records the subnet Docker gave the network")
		p := netip.MustParsePrefix(subnet)
		Expect(p.Bits()).To(Equal(28))
		Expect(pool.Contains(p.Addr())).To(BeTrue(), "%s is in the agent's pool %s", p, pool)
		Expect(seen).NotTo(HaveKey(subnet), "%s handed out twice", subnet)
		seen[subnet] = true
	}
}

// fetch asks for url with wget from inside a container; a refusal or a timeout is an error. (The image's
// busybox wget crashes on its own -T, so coreutils' timeout bounds it.) What must answer is asked again
// until it does; what must not answer gets these 3 s, in which an allowed peer on the same host answers.
// It connects directly (-Y off): Isolated containers have HTTP_PROXY set, and busybox wget does not read
// NO_PROXY, so without it the Sandbox's own services would be asked of the egress proxy.
func fetch(container, url string) (string, error) {
	return docker("exec", container, "timeout", "3", "wget", "-Y", "off", "-q", "-O", "-", url)
}

// ipOf is a container's address on its one network.
func ipOf(container string) string {
	GinkgoHelper()
	ip, err := docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", container)
	Expect(err).NotTo(HaveOccurred())
	Expect(ip).NotTo(BeEmpty())
	return ip
}

// expectOwnServiceOnly checks that name's primary reaches its own service by name and not other's service by
// address, and whether name's bridge is internal.
func expectOwnServiceOnly(ns, name, other, internal string) {
	GinkgoHelper()
	primary := onlyContainer(ns, name, dsv1alpha1.RolePrimary)
	Eventually(func() (string, error) { return fetch(primary, "http://web:8080/") }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("ok"))
	_, err := fetch(primary, "http://"+ipOf(onlyContainer(ns, other, dsv1alpha1.RoleService))+":8080/")
	Expect(err).To(HaveOccurred(), "%s reached the service of %s", name, other)
	network, err := docker("inspect", "-f", "{{.HostConfig.NetworkMode}}", primary)
	Expect(err).NotTo(HaveOccurred())
	Expect(docker("network", "inspect", "-f", "{{.Internal}}", network)).To(Equal(internal))
}

// expectSharedBridgeIsolation serves a page from server's primary and checks that it answers inside the
// Sandbox but not to client's primary, next to it on the node's shared bridge (inter-container traffic off).
func expectSharedBridgeIsolation(ns, server, client string) {
	GinkgoHelper()
	shared := dd.NodeIsolatedNetworkName(node)
	serverID, clientID := onlyContainer(ns, server, dsv1alpha1.RolePrimary), onlyContainer(ns, client, dsv1alpha1.RolePrimary)
	for _, id := range []string{serverID, clientID} {
		Expect(docker("inspect", "-f", "{{.HostConfig.NetworkMode}}", id)).To(Equal(shared))
	}
	Expect(docker("network", "inspect", "-f", `{{index .Options "com.docker.network.bridge.enable_icc"}}`, shared)).To(Equal("false"))
	_, err := docker("exec", "-d", serverID, "sh", "-c", "echo ok > /workspace/index.html && exec httpd -f -p 8080 -h /workspace")
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() (string, error) { return fetch(serverID, "http://127.0.0.1:8080/") }).
		WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("ok"))
	_, err = fetch(clientID, "http://"+ipOf(serverID)+":8080/")
	Expect(err).To(HaveOccurred(), "%s reached %s over the shared bridge", client, server)
}

// namespaceLeftovers lists the labelled containers, networks and volumes Docker still holds for ns.
func namespaceLeftovers(ns string) []string {
	GinkgoHelper()
	filter := []string{"--filter", "label=" + dsv1alpha1.LabelNode + "=" + node, "--filter", "label=" + dsv1alpha1.LabelNamespace + "=" + ns}
	var left []string
	for _, ls := range [][]string{{"container", "ls", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
		out, err := docker(append(ls, filter...)...)
		Expect(err).NotTo(HaveOccurred())
		for _, id := range strings.Fields(out) {
			left = append(left, ls[0]+" "+id)
		}
	}
	return left
}
