package sandbox

import (
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/status"
)

func withNetwork(mode dsv1alpha1.NetworkMode) func(*dsv1alpha1.Sandbox) {
	return func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.Network.Mode = mode }
}

// withSubnets gives the reconciler a pool of topology subnets; a /28 pool holds exactly one.
func (h *harness) withSubnets(cidr string) {
	h.t.Helper()
	pool, err := NewTopologySubnets(cidr)
	h.noErr(err)
	h.r.Subnets = pool
}

func TestEnsureNetwork(t *testing.T) {
	db := newService("db")
	withDB := []client.Object{newService("db")}
	noNetwork := func(attachment dd.NetworkAttachment) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			g.Expect(s.attachment).To(Equal(attachment))
			g.Expect(h.docker.Calls(fake.OpEnsureNetwork)).To(BeZero())
			g.Expect(s.sbx.Status.NetworkID).To(BeEmpty())
		}
	}
	ownNetwork := func(bridgePrefix string, internal bool) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			n := h.network(s.networkName())
			g.Expect(n.Exists).To(BeTrue())
			g.Expect(n.Internal).To(Equal(internal), "internal")
			g.Expect(n.Bridge).To(HavePrefix(bridgePrefix))
			g.Expect(h.egress.serves(n.Gateway)).To(Equal(bridgePrefix == dd.BridgeProxied), "egress proxy on the gateway")
			g.Expect(n.ICC).To(BeTrue(), "its own containers reach each other")
			g.Expect(s.sbx.Status.NetworkID).To(Equal(n.ID))
			g.Expect(s.attachment).To(Equal(dd.NetworkAttachment{Name: s.networkName(), Aliases: []string{"s"}}))
		}
	}
	sharedNetwork := func(name, bridgePrefix string, internal, proxied bool) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			n := h.network(name)
			g.Expect(n.Exists).To(BeTrue())
			g.Expect(n.Internal).To(Equal(internal), "internal")
			g.Expect(n.ICC).To(BeFalse(), "Sandboxes on a shared bridge cannot reach each other")
			g.Expect(n.Bridge).To(HavePrefix(bridgePrefix))
			g.Expect(s.attachment).To(Equal(dd.NetworkAttachment{Name: name}))
			g.Expect(s.sbx.Status.NetworkID).To(BeEmpty(), "the shared bridge is not the Sandbox's")
			g.Expect(h.egress.serves(n.Gateway)).To(Equal(proxied), "egress proxy on the gateway")
			g.Expect(s.proxy != "").To(Equal(proxied))
		}
	}
	runStepCases(t, (*Reconciler).ensureNetwork, []stepCase{
		{
			name:  "None without services: no network at all",
			sbx:   atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkNone)), 1),
			check: noNetwork(dd.NetworkAttachment{}),
		},
		{
			name:  "no mode (the default, None) without services: no network at all",
			sbx:   atTopology(newSandbox("s"), 1),
			check: noNetwork(dd.NetworkAttachment{}),
		},
		{
			name:  "Isolated without services: the node's shared Isolated bridge, internal, with the egress proxy on its gateway",
			sbx:   atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkIsolated)), 1),
			check: sharedNetwork(dd.NodeIsolatedNetworkName(testNode), dd.BridgeProxied, true, true),
		},
		{
			name:  "Unrestricted without services: the node's shared routed bridge, no proxy",
			sbx:   atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkUnrestricted)), 1),
			check: sharedNetwork(dd.NodeNetworkName(testNode), dd.BridgeOpen, false, false),
		},
		{
			name:    "None with services: a network of its own, internal",
			sbx:     atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkNone), withServices("db")), 1, db),
			objects: withDB,
			events:  []string{"Normal " + EventNetworkCreated},
			check:   ownNetwork(dd.BridgeClosed, true),
		},
		{
			name:    "Isolated with services: a network of its own, internal, whose way out is the egress proxy",
			sbx:     atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkIsolated), withServices("db")), 1, db),
			objects: withDB,
			docker:  func(h *harness, s *scope) { h.withSubnets("10.120.0.0/24") },
			events:  []string{"Normal " + EventNetworkCreated},
			check: func(g Gomega, h *harness, s *scope) {
				ownNetwork(dd.BridgeProxied, true)(g, h, s)
				g.Expect(s.proxy).To(Equal("http://10.120.0.1:3128"))
			},
		},
		{
			name:    "Unrestricted with services: a network of its own, routed out",
			sbx:     atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkUnrestricted), withServices("db")), 1, db),
			objects: withDB,
			events:  []string{"Normal " + EventNetworkCreated},
			check:   ownNetwork(dd.BridgeOpen, false),
		},
		{
			name:    "a network made by an earlier pass is used as it is",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, db),
			objects: withDB,
			docker:  func(h *harness, s *scope) { h.makeNetwork(s) },
			check: func(g Gomega, h *harness, s *scope) {
				ownNetwork(dd.BridgeClosed, true)(g, h, s)
				g.Expect(h.docker.Calls(fake.OpEnsureNetwork)).To(Equal(1), "only the setup's")
			},
		},
		{
			name:    "the network gets a subnet of the node's pool",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, db),
			objects: withDB,
			docker:  func(h *harness, s *scope) { h.withSubnets("10.120.0.0/24") },
			events:  []string{"Normal " + EventNetworkCreated},
			check: func(g Gomega, h *harness, s *scope) {
				n := h.network(s.networkName())
				sub := netip.MustParsePrefix(n.Subnet)
				g.Expect(sub.Bits()).To(Equal(TopologySubnetBits))
				g.Expect(netip.MustParsePrefix("10.120.0.0/24").Contains(sub.Addr())).To(BeTrue())
				g.Expect(n.Labels[dsv1alpha1.LabelSubnet]).To(Equal(n.Subnet))
			},
		},
		{
			name:    "with every subnet of the pool held, the Sandbox waits Pending for one",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, db),
			objects: withDB,
			docker: func(h *harness, s *scope) {
				h.withSubnets("10.120.0.0/28")
				_, err := h.r.Subnets.pool.Allocate("another-sandbox")
				h.noErr(err)
			},
			stop: true,
			want: outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonNoFreeSubnet},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.network(s.networkName()).Exists).To(BeFalse())
				g.Expect(s.recheck).To(Equal(bindRetry))
			},
		},
		{
			name:    "a subnet taken by a network outside the agent's bookkeeping is given up for another",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, db),
			objects: withDB,
			docker:  func(h *harness, s *scope) { h.withSubnets("10.120.0.0/27") },
			faults:  func(h *harness) { h.docker.FailNext(fake.OpEnsureNetwork, dd.KindConflict) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonNetworkFailed},
			message: "taken by a network this agent did not make",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
				next := newScope(s.sbx)
				h.continues(h.r.observe(h.ctx, next))
				h.continues(h.r.resolveSpec(h.ctx, next))
				h.continues(h.r.ensureNetwork(h.ctx, next))
				g.Expect(h.network(s.networkName()).Subnet).To(Equal("10.120.0.16/28"), "the next pass takes the other subnet")
			},
		},
		{
			name: "a Sandbox that no longer has a network of its own frees its subnet",
			sbx:  atTopology(newSandbox("s"), 2),
			docker: func(h *harness, s *scope) {
				h.withSubnets("10.120.0.0/28")
				_, err := h.r.Subnets.pool.Allocate(string(s.sbx.UID))
				h.noErr(err)
			},
			check: func(g Gomega, h *harness, s *scope) {
				_, err := h.r.Subnets.pool.Allocate("another-sandbox")
				g.Expect(err).NotTo(HaveOccurred())
			},
		},
		{
			name:    "Docker unavailable while making the network: retried",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, db),
			objects: withDB,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpEnsureNetwork, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "creating the topology network failed",
		},
	})
}

func TestIsolatedContainersAreToldTheProxy(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, newService("db"))
	h.withSubnets("10.120.0.0/24")
	s := newScope(atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkIsolated), withServices("db")), 1, newService("db")))
	h.continues(h.r.observe(h.ctx, s))
	h.continues(h.r.resolveSpec(h.ctx, s))
	h.continues(h.r.ensureNetwork(h.ctx, s))
	want := []dd.EnvVar{
		{Name: "HTTP_PROXY", Value: "http://10.120.0.1:3128"}, {Name: "http_proxy", Value: "http://10.120.0.1:3128"},
		{Name: "HTTPS_PROXY", Value: "http://10.120.0.1:3128"}, {Name: "https_proxy", Value: "http://10.120.0.1:3128"},
		{Name: "NO_PROXY", Value: "localhost,127.0.0.1,::1,s,db"}, {Name: "no_proxy", Value: "localhost,127.0.0.1,::1,s,db"},
	}
	g.Expect(h.r.primarySpec(s).Env).To(ContainElements(want))
	g.Expect(h.r.serviceSpec(s, s.services[0]).Env).To(ContainElements(want))
}

func TestOnlyIsolatedContainersAreToldAProxy(t *testing.T) {
	for _, mode := range []dsv1alpha1.NetworkMode{dsv1alpha1.NetworkNone, dsv1alpha1.NetworkUnrestricted} {
		g := NewWithT(t)
		h := newHarness(t)
		s := newScope(atTopology(newSandbox("s", withNetwork(mode)), 1))
		h.continues(h.r.observe(h.ctx, s))
		h.continues(h.r.ensureNetwork(h.ctx, s))
		for _, e := range h.r.primarySpec(s).Env {
			g.Expect(e.Name).NotTo(ContainSubstring("PROXY"), string(mode))
		}
	}
}

func TestKeepEgressServesTheProxyOnExactlyTheIsolatedBridgesThatExist(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t)
	isolated := newScope(atTopology(newSandbox("a", withNetwork(dsv1alpha1.NetworkIsolated)), 1))
	open := newScope(atTopology(newSandbox("b", withNetwork(dsv1alpha1.NetworkUnrestricted)), 1))
	h.continues(h.r.ensureNetwork(h.ctx, isolated))
	h.continues(h.r.ensureNetwork(h.ctx, open))
	gw := h.network(dd.NodeIsolatedNetworkName(testNode)).Gateway
	h.egress.Keep([]netip.Addr{netip.MustParseAddr("10.120.9.1")}) // a gateway of a bridge gone since, and not the live one

	networks, err := h.docker.ListNetworks(h.ctx, nil) // as the sweeper lists them
	h.noErr(err)
	h.r.KeepEgress(networks)
	g.Expect(h.egress.serves(gw)).To(BeTrue(), "the Isolated bridge's gateway, served again (as after an agent restart)")
	g.Expect(h.egress.serves("10.120.9.1")).To(BeFalse(), "a bridge that is gone is let go")
	g.Expect(h.egress.serves(h.network(dd.NodeNetworkName(testNode)).Gateway)).To(BeFalse(), "no proxy on an Unrestricted bridge")
}

func TestSharedBridgeStaysWhileALiveSandboxMayStillJoinIt(t *testing.T) {
	g := NewWithT(t)
	joining := atTopology(newSandbox("joining", withNetwork(dsv1alpha1.NetworkIsolated)), 1)
	h := newHarness(t, joining)
	s := newScope(joining)
	h.continues(h.r.ensureNetwork(h.ctx, s)) // its network step is done; its primary is not made yet
	shared := dd.NodeIsolatedNetworkName(testNode)

	h.noErr(h.r.releaseSharedNetworks(h.ctx)) // another Sandbox's deletion
	g.Expect(h.network(shared).Exists).To(BeTrue(), "a live Sandbox of the node may still join it")

	h.noErr(h.client.Delete(h.ctx, joining))
	h.noErr(h.r.releaseSharedNetworks(h.ctx))
	g.Expect(h.network(shared).Exists).To(BeFalse(), "with no Sandbox left to join it, it goes")
}
