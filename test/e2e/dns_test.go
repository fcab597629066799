//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// The resolver of the spec's own daemon: an address of the host's loopback, as systemd-resolved's 127.0.0.53
// or a local dnsmasq would be, on which the spec's DNS listener takes every query.
const (
	dnsResolver      = "127.0.0.153"
	dnsTopologyPool  = "10.219.0.0/24"
	dnsOwnDaemonName = "dns"
)

// Docker before 23.0.11 / 25.0.4 forwards the DNS queries of containers on internal networks through the
// host's resolver when that is on loopback (CVE-2024-29018). On an own daemon whose resolver is the spec's
// own listener on loopback, the None and Isolated Sandboxes' queries for outside names reach nothing, while a
// container the spec makes by hand on an internal network of that daemon shows the engine would leak them
// (docs/egress.md, "DNS").
var _ = Describe("DNS from None and Isolated Sandboxes on a Docker whose resolver is on loopback", Label("egress"), func() {
	It("sends no query of theirs to the host's resolver, while their own names still resolve", func() {
		queries := dnsListener(dnsResolver)
		d := startDockerdResolving(dnsOwnDaemonName, dnsResolver)
		ownNode := node + "-" + dnsOwnDaemonName
		startOwnAgent(d, ownNode, dnsTopologyPool)
		ns := newNamespace("dns")
		DeferCleanup(releaseSandboxes, ns)
		tok := fmt.Sprintf("%x", time.Now().UnixNano())

		var manifest strings.Builder
		manifest.WriteString(`apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata: {name: svc}
spec:
  image: dockside.dev/busybox:local
  command: [sleep, "3600"]
`)
		for _, mode := range []dsv1alpha1.NetworkMode{dsv1alpha1.NetworkNone, dsv1alpha1.NetworkIsolated} {
			fmt.Fprintf(&manifest, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  nodeName: %s\n  image: dockside.dev/busybox:local\n  services: [svc]\n  network: {mode: %s}\n",
				strings.ToLower(string(mode)), ownNode, mode)
		}
		apply(ns, manifest.String())
		for _, mode := range []dsv1alpha1.NetworkMode{dsv1alpha1.NetworkNone, dsv1alpha1.NetworkIsolated} {
			name := strings.ToLower(string(mode))
			waitFor(ns, "sandbox/"+name, "condition=Ready", 3*time.Minute)
			primary := rolesOn(d, ownNode, ns, name)[dsv1alpha1.RolePrimary]
			Expect(primary).To(HaveLen(1), "the primary of %s", name)
			// Docker's embedded resolver answers: the service's name resolves...
			out, err := d.docker("exec", primary[0], "nslookup", "svc")
			Expect(err).NotTo(HaveOccurred(), "%s resolves its service's name: %s", name, out)
			// ...and an outside name does not, and goes nowhere.
			for _, q := range []string{"leak-" + name + "-" + tok + ".example.com", "leak-" + name + "-" + tok} {
				out, err = d.docker("exec", primary[0], "nslookup", q)
				Expect(err).To(HaveOccurred(), "%s resolved %s: %s", name, q, out)
			}
		}

		// The control: a container made by hand on an internal network of the same daemon, without Dockside's
		// DNS setting. On an affected engine its query reaches the listener, which shows the spec can see a leak.
		_, err := d.docker("network", "create", "--internal", "--subnet", "10.219.0.240/28", "dns-control")
		Expect(err).NotTo(HaveOccurred())
		version, err := d.docker("version", "--format", "{{.Server.Version}}")
		Expect(err).NotTo(HaveOccurred())
		control := "leak-control-" + tok + ".example.com"
		out, _ := d.docker("run", "--rm", "--network", "dns-control", "dockside.dev/busybox:local", "nslookup", control)
		GinkgoWriter.Printf("engine %s, the control's nslookup: %s\n", version, out)
		if strings.HasPrefix(version, "20.") {
			Eventually(queries.seen).WithArguments(control).WithTimeout(10*time.Second).Should(BeTrue(),
				"Docker %s leaks an internal network's query to a resolver on loopback (CVE-2024-29018)", version)
		}

		time.Sleep(2 * time.Second) // a forwarded query would be in long before: the lookups above waited for their answers
		var fromSandboxes []string
		for _, q := range queries.containing(tok) {
			if !strings.Contains(q, "leak-control-") {
				fromSandboxes = append(fromSandboxes, q)
			}
		}
		Expect(fromSandboxes).To(BeEmpty(), "the Sandboxes' queries the host's resolver got")

		for _, name := range []string{"none", "isolated"} {
			deleteAndExpectGone(ns, name)
		}
		_, err = kubectl("delete", "-n", ns, "sandboxservice", "svc", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred())
	})
})

// dnsQueries are the datagrams and streams a DNS listener received, as text (a query holds its name's labels).
type dnsQueries struct {
	mu  sync.Mutex
	got []string
}

func (q *dnsQueries) add(b []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	// A query's name is its labels, each after a length byte: printable enough to search for a token.
	q.got = append(q.got, strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '.'
		}
		return r
	}, string(b)))
}

// containing lists the queries that hold s.
func (q *dnsQueries) containing(s string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, g := range q.got {
		if strings.Contains(g, s) {
			out = append(out, g)
		}
	}
	return out
}

// seen tells whether a query for name arrived (its first label is enough).
func (q *dnsQueries) seen(name string) bool {
	label, _, _ := strings.Cut(name, ".")
	return len(q.containing(label)) > 0
}

// dnsListener listens on addr:53, UDP and TCP, records whatever arrives and answers nothing, until the spec
// ends.
func dnsListener(addr string) *dnsQueries {
	GinkgoHelper()
	q := &dnsQueries{}
	pc, err := net.ListenPacket("udp4", net.JoinHostPort(addr, "53"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pc.Close)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q.add(buf[:n])
		}
	}()
	l, err := net.Listen("tcp4", net.JoinHostPort(addr, "53"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(l.Close)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4096)
				n, _ := c.Read(buf)
				q.add(buf[:n])
			}()
		}
	}()
	return q
}
