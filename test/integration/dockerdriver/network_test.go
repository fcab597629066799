//go:build integration

package dockerdriver_test

import (
	"fmt"
	"time"

	"github.com/docker/docker/api/types/network"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// httpServer is a busybox web server answering "hello" on port 8080.
var httpServer = []string{"sh", "-c", "mkdir -p /tmp/www && echo hello > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"}

// fetch is a shell line that GETs / from host:8080 with a 2 s timeout (busybox nc; its wget is unusable here).
func fetch(host string) string {
	return fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 %s 8080`, host)
}

var _ = Describe("Networks", func() {
	// ensureNet makes a network of owner o; purpose tells several networks of one owner apart.
	ensureNet := func(ctx SpecContext, o dd.Owner, purpose string, internal, icc bool) dd.NetworkInfo {
		GinkgoHelper()
		n, err := driver.EnsureNetwork(ctx, dd.NetworkSpec{Name: dd.Name(o, dsv1alpha1.RoleNetwork, purpose), Owner: o, Internal: internal, ICC: icc})
		Expect(err).NotTo(HaveOccurred())
		return n
	}
	// attached is a container of o on network n with aliases, and a /tmp for httpServer's page (the root
	// file system is read-only).
	attached := func(o dd.Owner, service string, n dd.NetworkInfo, cmd []string, aliases ...string) dd.ContainerSpec {
		s := spec(o, dsv1alpha1.RoleService, service, cmd...)
		s.Network = dd.NetworkAttachment{Name: n.Name, Aliases: aliases}
		s.Tmpfs = []dd.TmpfsMount{{Target: "/tmp", SizeBytes: 1 << 20}}
		return s
	}

	It("ensures, adopts, observes and removes a labelled bridge with a given subnet", func(ctx SpecContext) {
		o := newOwner("bridge")
		s := dd.NetworkSpec{Name: dd.Name(o, dsv1alpha1.RoleNetwork, ""), Owner: o, Internal: true, ICC: false,
			Subnet: "10.213.7.0/28", Gateway: "10.213.7.1"}
		n, err := driver.EnsureNetwork(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		again, err := driver.EnsureNetwork(ctx, s)
		Expect(err).NotTo(HaveOccurred())
		Expect(again.ID).To(Equal(n.ID))

		raw, err := docker.NetworkInspect(ctx, n.ID, network.InspectOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(raw.Driver).To(Equal("bridge"))
		Expect(raw.Internal).To(BeTrue())
		Expect(raw.Options).To(HaveKeyWithValue("com.docker.network.bridge.enable_icc", "false"))
		Expect(raw.IPAM.Config[0].Subnet).To(Equal("10.213.7.0/28"))
		Expect(raw.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelSubnet, "10.213.7.0/28"))
		Expect(raw.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelRole, dsv1alpha1.RoleNetwork))

		seen, err := driver.ObserveNetwork(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(seen).To(Equal(n))

		// The same name for another owner is a conflict, never adopted.
		other := s
		other.Owner.UID = "someone-else"
		_, err = driver.EnsureNetwork(ctx, other)
		Expect(dd.IsConflict(err)).To(BeTrue(), "%v", err)

		Expect(driver.RemoveNetwork(ctx, s.Name)).To(Succeed())
		Expect(driver.RemoveNetwork(ctx, s.Name)).To(Succeed(), "removing a missing network is not an error")
		gone, err := driver.ObserveNetwork(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(gone.Exists).To(BeFalse())
	})

	It("gives an internal network no egress", func(ctx SpecContext) {
		o := newOwner("internal")
		outside := ensureNet(ctx, o, "outside", false, true)
		inside := ensureNet(ctx, o, "inside", true, true)
		server := run(ctx, attached(o, "server", outside, httpServer))
		neighbour := run(ctx, attached(o, "neighbour", outside, nil))
		client := run(ctx, attached(o, "client", inside, nil))

		// The server answers on its own network...
		Eventually(func() string {
			return string(sh(ctx, neighbour.Name, fetch(server.IP), 5*time.Second).Stdout)
		}).WithTimeout(10 * time.Second).Should(ContainSubstring("hello"))
		// ...and cannot be reached from the internal network.
		res := sh(ctx, client.Name, fetch(server.IP), 5*time.Second)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(string(res.Stdout)).NotTo(ContainSubstring("hello"))
	})

	It("blocks traffic between containers on a bridge with inter-container traffic off, names still resolve", func(ctx SpecContext) {
		o := newOwner("isolated")
		isolated := ensureNet(ctx, o, "isolated", false, false)
		server := run(ctx, attached(o, "server", isolated, httpServer, "web"))
		client := run(ctx, attached(o, "client", isolated, nil))

		lookup := sh(ctx, client.Name, "nslookup web", 5*time.Second)
		Expect(lookup.ExitCode).To(Equal(0))
		Expect(string(lookup.Stdout)).To(ContainSubstring(server.IP))
		// Give the server the time it needs to listen before trusting a failure.
		Expect(string(sh(ctx, server.Name, "sleep 1; "+fetch("127.0.0.1"), 5*time.Second).Stdout)).To(ContainSubstring("hello"))
		res := sh(ctx, client.Name, fetch("web"), 5*time.Second)
		Expect(res.ExitCode).NotTo(Equal(0))
		Expect(string(res.Stdout)).NotTo(ContainSubstring("hello"))
	})

	It("resolves DNS aliases and carries traffic on a bridge with inter-container traffic on", func(ctx SpecContext) {
		o := newOwner("aliases")
		n := ensureNet(ctx, o, "topology", true, true)
		run(ctx, attached(o, "server", n, httpServer, "web", "www.internal"))
		client := run(ctx, attached(o, "client", n, nil))
		for _, alias := range []string{"web", "www.internal"} {
			Eventually(func() string {
				return string(sh(ctx, client.Name, fetch(alias), 5*time.Second).Stdout)
			}).WithTimeout(10*time.Second).Should(ContainSubstring("hello"), "alias %s", alias)
		}
	})
})
