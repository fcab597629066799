package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// observe lists what Docker holds for the Sandbox (by its UID label, so any generation): one call for
// containers and one for networks per pass, and no polling between passes.
func (r *Reconciler) observe(ctx context.Context, s *scope) (bool, error) {
	match := map[string]string{dsv1alpha1.LabelUID: string(s.sbx.UID)}
	containers, err := r.Driver.ListContainers(ctx, match)
	if err != nil {
		return s.fail(dsv1alpha1.ReasonDockerUnavailable, "listing the Sandbox's containers", err)
	}
	networks, err := r.Driver.ListNetworks(ctx, match)
	if err != nil {
		return s.fail(dsv1alpha1.ReasonDockerUnavailable, "listing the Sandbox's networks", err)
	}
	s.containers = map[string]dd.ContainerInfo{}
	for _, c := range containers {
		s.containers[c.Name] = c
	}
	s.networks = map[string]dd.NetworkInfo{}
	for _, n := range networks {
		s.networks[n.Name] = n
	}
	return false, nil
}

// resolveSpec reads the SandboxServices the spec names and hashes what the topology would be built from.
// A missing SandboxService is noted, not failed: whether it matters depends on the topology's state.
func (r *Reconciler) resolveSpec(ctx context.Context, s *scope) (bool, error) {
	s.services = make([]*dsv1alpha1.SandboxService, len(s.sbx.Spec.Services))
	for i, name := range s.sbx.Spec.Services {
		svc := &dsv1alpha1.SandboxService{}
		err := r.Get(ctx, types.NamespacedName{Namespace: s.sbx.Namespace, Name: name}, svc)
		switch {
		case apierrors.IsNotFound(err):
			if s.missing == "" {
				s.missing = name
			}
		case err != nil:
			return s.fail(dsv1alpha1.ReasonServiceNotFound, "reading SandboxService "+name, err)
		default:
			s.services[i] = svc
		}
	}
	s.hash = topology.Hash(&s.sbx.Spec, s.sbx.Spec.Services, s.services)
	s.resolved = true
	return false, nil
}

// ensureTopology decides which topology generation should run. The current one stays while the spec still
// hashes to it (for a settled topology: while the Sandbox's own spec does); otherwise the topology rolls.
// Either way nothing of a newer generation is built while anything of an older one may still exist.
func (r *Reconciler) ensureTopology(ctx context.Context, s *scope) (bool, error) {
	st := &s.sbx.Status
	settled := topology.Settled(s.sbx)
	if s.missing != "" && !settled {
		s.note(factServiceMissing, dsv1alpha1.ReasonServiceNotFound, "SandboxService %q does not exist in namespace %s", s.missing, s.sbx.Namespace)
		return true, nil
	}
	current := st.TopologyGeneration > 0 && st.TopologyHash == s.hash
	if settled {
		current = st.TopologyGeneration > 0 && topology.OwnSpecPart(st.TopologyHash) == topology.OwnSpecPart(s.hash)
	}
	if !current {
		if r.holdLazy(s) {
			return true, nil // built at its first command
		}
		return r.rollTopology(ctx, s)
	}
	if err := r.removeTopology(ctx, s, st.TopologyGeneration); err != nil {
		return s.fail(dsv1alpha1.ReasonCleanupFailed, "removing the previous topology (the new one waits until Docker confirms it is gone)", err)
	}
	return false, nil
}

// rollTopology removes the topology that runs (keeping the workspace) and records the next generation. A
// roll builds nothing itself: the next pass does, once the cache shows the new generation, so that a pass
// working from a stale read can never tear down a topology a newer pass has just built. The first generation
// is built in the pass that records it: while Docker holds nothing of any topology of the Sandbox there is
// nothing such a pass could tear down, and a stale one only builds the same generation again (its status
// write then fails on the resourceVersion).
func (r *Reconciler) rollTopology(ctx context.Context, s *scope) (bool, error) {
	st := &s.sbx.Status
	first := st.TopologyGeneration == 0 && !s.holdsTopology()
	if !first {
		live := &dsv1alpha1.Sandbox{}
		if err := r.APIReader.Get(ctx, s.key(), live); err != nil {
			return s.fail(dsv1alpha1.ReasonRollingTopology, "reading the Sandbox", err)
		}
		if live.UID != s.sbx.UID || live.Status.TopologyGeneration != st.TopologyGeneration || live.Status.TopologyHash != st.TopologyHash {
			s.after(status.StaleRetry) // the cache is behind the agent's own last write (or the Sandbox was replaced)
			return true, nil
		}
		if stop, err := r.holdBeforeRoll(ctx, s); stop || err != nil {
			return stop, err
		}
		if err := r.removeTopology(ctx, s, 0); err != nil {
			return s.fail(dsv1alpha1.ReasonCleanupFailed, "removing the previous topology (the new one waits until Docker confirms it is gone)", err)
		}
	}
	rolled := st.TopologyGeneration > 0
	st.TopologyGeneration++
	st.TopologyHash = s.hash
	st.ContainerID, st.NetworkID, st.StartTime, st.FinishTime, st.Result = "", "", nil, nil, nil
	st.Services = nil
	for _, name := range s.sbx.Spec.Services {
		st.Services = append(st.Services, dsv1alpha1.ServiceInstanceStatus{Name: name, State: dsv1alpha1.ServicePending})
	}
	status.Set(s.sbx, dsv1alpha1.ConditionTopologyPoisoned, false, dsv1alpha1.ReasonHealthy, "no service or primary has failed")
	r.probes.Forget(s.key())
	if rolled {
		r.event(s.sbx, false, EventRolled, "Roll", "the spec changed: topology generation %d replaces the previous one; the workspace is kept", st.TopologyGeneration)
		s.note(factBuilding, dsv1alpha1.ReasonRollingTopology, "rolling to topology generation %d; the workspace is kept", st.TopologyGeneration)
		return true, nil
	}
	s.note(factBuilding, dsv1alpha1.ReasonCreating, "building the topology")
	return !first, nil
}

// holdsTopology tells whether Docker holds a container or network of any topology generation of the Sandbox
// (the workspace's holder, of generation 0, outlives topologies and does not count).
func (s *scope) holdsTopology() bool {
	for _, c := range s.containers {
		if owner, _, _ := dd.OwnerFromLabels(c.Labels); owner.Generation > 0 {
			return true
		}
	}
	for _, n := range s.networks {
		if owner, _, _ := dd.OwnerFromLabels(n.Labels); owner.Generation > 0 {
			return true
		}
	}
	return false
}

// removeTopology removes the primaries, services (in reverse start order) and own networks of every
// generation but keep (0: all of them), leaving the workspace and its holder. It stops at the first removal
// Docker does not confirm, so that a replacement never starts next to something that may still run.
func (r *Reconciler) removeTopology(ctx context.Context, s *scope, keep int64) error {
	for _, c := range removalOrder(s.containers, s.sbx.Spec.Services) {
		owner, role, _ := dd.OwnerFromLabels(c.Labels)
		if owner.Generation == keep || (role != dsv1alpha1.RolePrimary && role != dsv1alpha1.RoleService) {
			continue
		}
		if err := r.Driver.RemoveContainer(ctx, c.Name); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Name, err)
		}
		delete(s.containers, c.Name)
	}
	for name, n := range s.networks {
		if owner, _, _ := dd.OwnerFromLabels(n.Labels); owner.Generation == keep {
			continue
		}
		if err := r.Driver.RemoveNetwork(ctx, name); err != nil {
			return fmt.Errorf("removing network %s: %w", name, err)
		}
		delete(s.networks, name)
	}
	return nil
}

// removalOrder sorts containers the way docs/design/docker-mapping.md ("Deletion") removes them: primaries, then services in reverse start
// order (spec order reversed, then services no longer in the spec), then the holder last.
func removalOrder(containers map[string]dd.ContainerInfo, services []string) []dd.ContainerInfo {
	rank := func(c dd.ContainerInfo) int {
		_, role, service := dd.OwnerFromLabels(c.Labels)
		switch role {
		case dsv1alpha1.RolePrimary:
			return 0
		case dsv1alpha1.RoleService:
			return 1 + len(services) - slices.Index(services, service) // not in the spec (-1) sorts last
		default:
			return 3 + len(services)
		}
	}
	out := make([]dd.ContainerInfo, 0, len(containers))
	for _, c := range containers {
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b dd.ContainerInfo) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
