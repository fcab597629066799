//go:build integration

package controllers_test

import (
	"fmt"
	"net/netip"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("Topology subnets", func() {
	// pool gives the agent a pool of n /28 subnets.
	pool := func(n int) func(*agent.Options) {
		return func(o *agent.Options) {
			o.TopologyPool = netip.PrefixFrom(netip.MustParseAddr("10.120.0.0"), 28-log2(n)).String()
		}
	}
	// withService is a session named name in ns on node with the service db.
	withService := func(ns, name, node string) *dsv1alpha1.Sandbox {
		sbx := sandbox(ns, name, node)
		sbx.Spec.Services = []string{"db"}
		return sbx
	}

	It("gives each topology with services a subnet of its own, none to one without, and frees it on delete", func() {
		ns, a := newNamespace(), newAgent(pool(2))
		create(service(ns, "db"))
		first, second := withService(ns, "first", a.node), withService(ns, "second", a.node)
		isolated, closed := sandbox(ns, "isolated", a.node), sandbox(ns, "closed", a.node)
		isolated.Spec.Network.Mode = dsv1alpha1.NetworkIsolated
		for _, sbx := range []*dsv1alpha1.Sandbox{first, second, isolated, closed} {
			create(sbx)
		}
		for _, sbx := range []*dsv1alpha1.Sandbox{first, second, isolated, closed} {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		}
		Expect([]string{subnetOf(a.docker, first), subnetOf(a.docker, second)}).To(ConsistOf("10.120.0.0/28", "10.120.0.16/28"))
		for _, sbx := range []*dsv1alpha1.Sandbox{isolated, closed} {
			Expect(ownNetworks(a.docker, sbx)).To(BeEmpty(), "%s needs no bridge of its own", sbx.Name)
		}
		Expect(container(a.docker, isolated, dsv1alpha1.RolePrimary, "").Network).To(Equal(dd.NodeIsolatedNetworkName(a.node)))
		Expect(container(a.docker, closed, dsv1alpha1.RolePrimary, "").Network).To(BeEmpty())

		third := withService(ns, "third", a.node)
		create(third)
		Eventually(condition(third, dsv1alpha1.ConditionReady)).Should(Equal("False/NoFreeSubnet"))
		Expect(phase(third)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(message(third, dsv1alpha1.ConditionReady)).To(ContainSubstring("no free topology subnet"))
		Expect(ownNetworks(a.docker, third)).To(BeEmpty())

		freed := subnetOf(a.docker, first)
		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(gone(first)).Should(BeTrue())
		Eventually(condition(third, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(subnetOf(a.docker, third)).To(Equal(freed))
	})

	It("keeps the subnet through a roll and frees it when the services go", func() {
		ns, a := newNamespace(), newAgent(pool(1))
		create(service(ns, "db"))
		sbx := withService(ns, "rolling", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		before := subnetOf(a.docker, sbx)

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "ROLLED", Value: "1"}} })
		Eventually(func() int64 { return get(sbx).Status.TopologyGeneration }).Should(BeEquivalentTo(2))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(subnetOf(a.docker, sbx)).To(Equal(before), "the pool's only subnet stays with the Sandbox")

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Services = nil })
		Eventually(func() int64 { return get(sbx).Status.TopologyGeneration }).Should(BeEquivalentTo(3))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(ownNetworks(a.docker, sbx)).To(BeEmpty())
		other := withService(ns, "other", a.node)
		create(other)
		Eventually(condition(other, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(subnetOf(a.docker, other)).To(Equal(before))
	})

	It("rebuilds the pool from Docker's labels after a restart, never handing a subnet out twice", func() {
		ns, node := newNamespace(), newNode()
		docker := newDocker(node)
		first := startAgent(node, docker, pool(4))
		create(service(ns, "db"))
		var all []*dsv1alpha1.Sandbox
		for i := range 2 {
			sbx := withService(ns, fmt.Sprintf("before-%d", i), node)
			create(sbx)
			all = append(all, sbx)
		}
		for _, sbx := range all {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		}
		first.stop()

		startAgent(node, docker, pool(4))
		for i := range 2 {
			sbx := withService(ns, fmt.Sprintf("after-%d", i), node)
			create(sbx)
			all = append(all, sbx)
		}
		subnets := map[string]string{}
		for _, sbx := range all {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
			sub := subnetOf(docker, sbx)
			Expect(subnets).NotTo(HaveKey(sub), "%s was handed out twice", sub)
			subnets[sub] = sbx.Name
		}
		full := withService(ns, "full", node)
		create(full)
		Eventually(condition(full, dsv1alpha1.ConditionReady)).Should(Equal("False/NoFreeSubnet"))
	})

	It("never hands one subnet to two Sandboxes converged at once, and serves waiting ones as subnets free up", func() {
		ns, a := newNamespace(), newAgent(pool(4), func(o *agent.Options) { o.Workers, o.Capacity = 4, 12 })
		create(service(ns, "db"))
		var all []*dsv1alpha1.Sandbox
		for i := range 10 {
			sbx := withService(ns, fmt.Sprintf("crowd-%d", i), a.node)
			create(sbx)
			all = append(all, sbx)
		}
		// readyAndWaiting counts the Ready ones and the ones waiting for a subnet, checking on the way that no
		// two networks share one.
		readyAndWaiting := func() (ready, waiting []*dsv1alpha1.Sandbox) {
			GinkgoHelper()
			expectDistinctSubnets(a.docker)
			for _, sbx := range all {
				switch condition(sbx, dsv1alpha1.ConditionReady)() {
				case "True/Running":
					ready = append(ready, sbx)
				case "False/NoFreeSubnet":
					waiting = append(waiting, sbx)
				}
			}
			return ready, waiting
		}
		for len(all) > 0 {
			want := min(4, len(all))
			var ready, waiting []*dsv1alpha1.Sandbox
			Eventually(func(g Gomega) {
				ready, waiting = readyAndWaiting()
				g.Expect(ready).To(HaveLen(want))
				g.Expect(waiting).To(HaveLen(len(all) - want))
			}).Should(Succeed())
			for _, sbx := range ready {
				Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
			}
			for _, sbx := range ready {
				Eventually(gone(sbx)).Should(BeTrue())
			}
			all = waiting
		}
		Expect(a.docker.ListNetworks(ctx(), map[string]string{dsv1alpha1.LabelRole: dsv1alpha1.RoleNetwork})).To(BeEmpty())
	})

	It("takes another subnet when Docker says the one it chose overlaps a network it did not make", func() {
		ns, a := newNamespace(), newAgent(pool(2))
		create(service(ns, "db"))
		a.docker.FailNext(fake.OpEnsureNetwork, dd.KindConflict) // what Docker answers to an overlapping pool
		sbx := withService(ns, "elsewhere", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(subnetOf(a.docker, sbx)).To(Equal("10.120.0.16/28"))

		next := withService(ns, "next", a.node)
		create(next)
		Eventually(condition(next, dsv1alpha1.ConditionReady)).Should(Equal("False/NoFreeSubnet"), "the overlapping subnet is never handed out again")
	})
})

// log2 is the base-2 logarithm of a power of two.
func log2(n int) int {
	bits := 0
	for n > 1 {
		n >>= 1
		bits++
	}
	return bits
}

// ownNetworks lists the networks the fake daemon holds for the Sandbox (by UID).
func ownNetworks(d *fake.Driver, sbx *dsv1alpha1.Sandbox) []dd.NetworkInfo {
	GinkgoHelper()
	list, err := d.ListNetworks(ctx(), map[string]string{dsv1alpha1.LabelUID: string(get(sbx).UID)})
	Expect(err).NotTo(HaveOccurred())
	return list
}

// subnetOf is the subnet of the Sandbox's one network, as its label records it and as Docker was asked to
// make it (gateway: the first address).
func subnetOf(d *fake.Driver, sbx *dsv1alpha1.Sandbox) string {
	GinkgoHelper()
	nets := ownNetworks(d, sbx)
	Expect(nets).To(HaveLen(1))
	n := nets[0]
	Expect(n.Subnet).To(Equal(n.Labels[dsv1alpha1.LabelSubnet]))
	Expect(netip.MustParsePrefix(n.Subnet).Addr().Next().String()).To(Equal(n.Gateway))
	return n.Subnet
}

// expectDistinctSubnets checks that no two networks of the daemon hold one subnet.
func expectDistinctSubnets(d *fake.Driver) {
	GinkgoHelper()
	nets, err := d.ListNetworks(ctx(), nil)
	Expect(err).NotTo(HaveOccurred())
	held := map[string]string{}
	for _, n := range nets {
		if n.Subnet == "" {
			continue
		}
		Expect(held).NotTo(HaveKey(n.Subnet), "%s is held by %s and %s", n.Subnet, held[n.Subnet], n.Name)
		held[n.Subnet] = n.Name
	}
}
