package sandbox

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// EgressGateways serves the agent's egress proxy on the gateways of the node's Isolated bridges, the only way
// out of them (docs/egress.md).
type EgressGateways interface {
	// Open serves the proxy on gateway; it is idempotent.
	Open(gateway netip.Addr) error
	// Keep serves it on exactly these gateways, closing it on those of bridges that are gone.
	Keep(gateways []netip.Addr)
}

// ensureNetwork picks the bridge the Sandbox's containers join (docs/egress.md, "Bridges"). A topology with
// services gets a bridge of its own, on a subnet from the node's pool, with traffic between its own
// containers on (the point of it). Without services, None gets no network at all, and Isolated and
// Unrestricted join the node's shared bridge of their mode, on which containers cannot reach each other,
// so that address space goes only to topologies that need it. Only Unrestricted bridges route out; an
// Isolated one reaches out only through the egress proxy on its gateway.
func (r *Reconciler) ensureNetwork(ctx context.Context, s *scope) (bool, error) {
	if len(s.sbx.Spec.Services) > 0 {
		return r.ensureOwnNetwork(ctx, s)
	}
	// No network of its own (those of older topologies are gone by this step): a subnet held since a
	// topology with services is freed.
	r.releaseSubnet(string(s.sbx.UID))
	s.attachment = dd.NetworkAttachment{}
	if !usesSharedNetwork(s.sbx) {
		return false, nil
	}
	n, err := r.Driver.EnsureNetwork(ctx, topology.SharedNetworkSpec(r.Options.Node, s.sbx.Spec.Network.Mode))
	if err != nil {
		return s.fail(dsv1alpha1.ReasonNetworkFailed, "creating the node's shared network", err)
	}
	s.attachment = dd.NetworkAttachment{Name: n.Name}
	return r.serveEgress(s, n)
}

// ensureOwnNetwork makes the topology's own bridge if it is not there yet.
func (r *Reconciler) ensureOwnNetwork(ctx context.Context, s *scope) (bool, error) {
	mode := s.sbx.Spec.Network.Mode
	name := s.networkName()
	n, ok := s.networks[name]
	if !ok {
		spec := dd.NetworkSpec{Name: name, Owner: s.names().Owner(), Internal: mode != dsv1alpha1.NetworkUnrestricted, ICC: true,
			Bridge: dd.BridgeName(topology.BridgePrefix(mode), name)}
		if stop, err := r.topologySubnet(ctx, s, &spec); stop || err != nil {
			return stop, err
		}
		var err error
		if n, err = r.Driver.EnsureNetwork(ctx, spec); err != nil {
			if r.subnetTakenElsewhere(ctx, s, spec, err) {
				return true, nil
			}
			return s.fail(dsv1alpha1.ReasonNetworkFailed, "creating the topology network", err)
		}
		s.networks[name] = n
		r.event(s.sbx, false, EventNetworkCreated, "Create", "network %s created", name)
	}
	s.sbx.Status.NetworkID = n.ID
	s.attachment = dd.NetworkAttachment{Name: name, Aliases: []string{s.sbx.Name}}
	return r.serveEgress(s, n)
}

// serveEgress opens the egress proxy on an Isolated Sandbox's bridge before any of its containers exists,
// and gives the scope the address its containers are told to use.
func (r *Reconciler) serveEgress(s *scope, n dd.NetworkInfo) (bool, error) {
	if s.sbx.Spec.Network.Mode != dsv1alpha1.NetworkIsolated || r.Egress == nil {
		return false, nil
	}
	gw, err := netip.ParseAddr(n.Gateway)
	if err == nil {
		err = r.Egress.Open(gw)
	}
	if err != nil {
		return s.fail(dsv1alpha1.ReasonNetworkFailed, "serving the egress proxy on network "+n.Name, err)
	}
	s.proxy = "http://" + netip.AddrPortFrom(gw, uint16(r.Options.EgressProxyPort)).String()
	return false, nil
}

// egressEnv points a container's HTTP clients at the egress proxy, except for the Sandbox's own loopback and
// the names of its own containers, which are reached directly. Both spellings are set: curl and Go read the
// lower-case ones, Python and pip either.
func egressEnv(s *scope, local []string) []dd.EnvVar {
	if s.proxy == "" {
		return nil
	}
	direct := strings.Join(append([]string{"localhost", "127.0.0.1", "::1"}, local...), ",")
	var out []dd.EnvVar
	for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		v := s.proxy
		if name == "NO_PROXY" {
			v = direct
		}
		out = append(out, dd.EnvVar{Name: name, Value: v}, dd.EnvVar{Name: strings.ToLower(name), Value: v})
	}
	return out
}

// topologyNames are the names a topology's containers know each other by: the primary's and every service's
// name and aliases.
func topologyNames(s *scope) []string {
	names := []string{s.sbx.Name}
	for _, svc := range s.services {
		if svc != nil {
			names = append(names, svc.Name)
			names = append(names, svc.Spec.Aliases...)
		}
	}
	return names
}

// releaseSharedNetworks removes each of the node's shared bridges once no container of the node is attached
// to it and no live Sandbox may still join it, so that a node without Sandboxes holds nothing in Docker; the
// next Sandbox that needs one makes it again. A Sandbox between its network step and its primary's creation
// has no container on the bridge yet, so the Sandboxes themselves are asked too (the node's, and the unbound
// ones that may bind here), or the bridge would go from under it (make bench's soak saw that).
func (r *Reconciler) releaseSharedNetworks(ctx context.Context) error {
	inUse, err := r.sharedNetworksWanted(ctx)
	if err != nil {
		return err
	}
	containers, err := r.Driver.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing the node's containers: %w", err)
	}
	for _, c := range containers {
		inUse[c.Network] = true
	}
	for _, name := range []string{dd.NodeNetworkName(r.Options.Node), dd.NodeIsolatedNetworkName(r.Options.Node)} {
		if inUse[name] {
			continue
		}
		if err := r.Driver.RemoveNetwork(ctx, name); err != nil {
			return fmt.Errorf("removing the shared network %s: %w", name, err)
		}
	}
	return nil
}

// sharedNetworksWanted names the shared bridges that live Sandboxes, of this node or not bound yet, join.
func (r *Reconciler) sharedNetworksWanted(ctx context.Context) (map[string]bool, error) {
	wanted := map[string]bool{}
	for _, reader := range []client.Reader{r.Client, r.Unbound} {
		if reader == nil {
			continue
		}
		var list dsv1alpha1.SandboxList
		if err := reader.List(ctx, &list); err != nil {
			return nil, fmt.Errorf("listing Sandboxes: %w", err)
		}
		for i := range list.Items {
			if sbx := &list.Items[i]; sbx.DeletionTimestamp.IsZero() && usesSharedNetwork(sbx) {
				wanted[topology.SharedNetworkSpec(r.Options.Node, sbx.Spec.Network.Mode).Name] = true
			}
		}
	}
	return wanted, nil
}

// KeepEgress serves the egress proxy on the gateways of the node's Isolated bridges that exist, and on no
// other: a restarted agent serves them again before any pass, and bridges that are gone are let go. The
// sweeper calls it with every network of the node (internal/nodewatch).
func (r *Reconciler) KeepEgress(networks []dd.NetworkInfo) {
	if r.Egress == nil {
		return
	}
	var gateways []netip.Addr
	for _, n := range networks {
		if gw, err := netip.ParseAddr(n.Gateway); err == nil && strings.HasPrefix(n.Bridge, dd.BridgeProxied) {
			gateways = append(gateways, gw)
		}
	}
	r.Egress.Keep(gateways)
}

// usesSharedNetwork: a Sandbox without services that may reach out joins the node's shared bridge of its mode.
func usesSharedNetwork(sbx *dsv1alpha1.Sandbox) bool {
	mode := sbx.Spec.Network.Mode
	return len(sbx.Spec.Services) == 0 && mode != dsv1alpha1.NetworkNone && mode != ""
}
