package sandbox

import (
	"context"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// ensureNetwork gives a topology with services a bridge of its own (internal when the policy denies egress;
// traffic between its own containers is the point of it, so it stays on), on a subnet from the node's pool.
// Without services none is made: the primary gets no network (None) or joins the node's shared bridge, on
// which containers cannot reach each other (Isolated, Unrestricted), so that address space goes only to
// topologies that need it.
func (r *SandboxReconciler) ensureNetwork(ctx context.Context, s *scope) (bool, error) {
	switch {
	case usesSharedNetwork(s.sbx):
		s.attachment = dd.NetworkAttachment{Name: dd.NodeNetworkName(r.Options.Node)}
	case len(s.sbx.Spec.Services) == 0:
		s.attachment = dd.NetworkAttachment{}
	default:
		return r.ensureOwnNetwork(ctx, s)
	}
	// No network of its own (those of older topologies are gone by this step): a subnet held since a
	// topology with services is freed.
	r.releaseSubnet(string(s.sbx.UID))
	return false, nil
}

// ensureOwnNetwork makes the topology's own bridge if it is not there yet.
func (r *SandboxReconciler) ensureOwnNetwork(ctx context.Context, s *scope) (bool, error) {
	mode := s.sbx.Spec.Network.Mode
	name := s.networkName()
	n, ok := s.networks[name]
	if !ok {
		spec := dd.NetworkSpec{Name: name, Owner: s.names().Owner(), Internal: mode == dsv1alpha1.NetworkNone || mode == "", ICC: true}
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
	return false, nil
}

// ensureSharedNetwork makes the node's shared bridge (inter-container traffic off) if it is not there yet.
func (r *SandboxReconciler) ensureSharedNetwork(ctx context.Context) error {
	_, err := r.Driver.EnsureNetwork(ctx, dd.NetworkSpec{Name: dd.NodeNetworkName(r.Options.Node), ICC: false})
	return err
}

// releaseSharedNetwork removes the node's shared bridge once no container of the node is attached to it, so
// that a node without Sandboxes holds nothing in Docker; the next Sandbox that needs it makes it again.
func (r *SandboxReconciler) releaseSharedNetwork(ctx context.Context) error {
	name := dd.NodeNetworkName(r.Options.Node)
	containers, err := r.Driver.ListContainers(ctx, nil)
	if err != nil {
		return err
	}
	for _, c := range containers {
		if c.Network == name {
			return nil
		}
	}
	return r.Driver.RemoveNetwork(ctx, name)
}

// usesSharedNetwork: a Sandbox without services that may reach out joins the node's shared bridge.
func usesSharedNetwork(sbx *dsv1alpha1.Sandbox) bool {
	mode := sbx.Spec.Network.Mode
	return len(sbx.Spec.Services) == 0 && mode != dsv1alpha1.NetworkNone && mode != ""
}
