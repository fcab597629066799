package sandbox

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/topology"
)

// What a Sandbox holds on its node, as admission counts it (docs/design/docker-mapping.md, "Labels, names
// and objects"):
//
//   - its workspace (a tmpfs volume: memory, kept for the Sandbox's whole life) and its holder's memory limit,
//     always, and the volume of its secret files when it has any;
//   - the memory limit of its primary and of each of its services, while its topology may run. A settled
//     topology (a finished run, a session stopped at its deadline, a poisoned one) is stopped by the pass
//     after the one that recorded it, so it counts only its workspace and holder until the Sandbox is
//     deleted (a run's ttlSecondsAfterFinished). The pass that stops it comes long before anything admitted
//     meanwhile has started its containers.
//
// Scratch mounts and /tmp are tmpfs mounted in the container, whose pages Docker charges to the container's
// own memory cgroup: they live within its memory limit, so they add nothing. A SandboxService that does not
// exist (yet) counts nothing until it does; the topology cannot start without it anyway.

// footprint is the memory in bytes the Sandbox holds on its node; services are the SandboxServices it
// names, in spec order, nil where one does not exist.
func footprint(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) int64 {
	held := topology.WorkspaceBytes(sbx.Spec.Workspace) + topology.HolderLimits.MemoryBytes + secretFilesFootprint(sbx.Spec)
	if topology.Settled(sbx) {
		return held
	}
	held += topology.Limits(sbx.Spec.Resources).MemoryBytes
	for _, svc := range services {
		if svc != nil {
			held += topology.Limits(svc.Spec.Resources).MemoryBytes
		}
	}
	return held
}

// footprintOf is footprint with the SandboxServices read from the cache.
func (r *Reconciler) footprintOf(ctx context.Context, sbx *dsv1alpha1.Sandbox) (int64, error) {
	services := make([]*dsv1alpha1.SandboxService, len(sbx.Spec.Services))
	for i, name := range sbx.Spec.Services {
		svc := &dsv1alpha1.SandboxService{}
		switch err := r.Get(ctx, types.NamespacedName{Namespace: sbx.Namespace, Name: name}, svc); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, fmt.Errorf("reading SandboxService %s: %w", name, err)
		default:
			services[i] = svc
		}
	}
	return footprint(sbx, services), nil
}

// nodeLoad is what the Sandboxes a node holds add up to.
type nodeLoad struct {
	count  int   // Sandboxes
	memory int64 // bytes of their footprints
}

// refusal says why a node has no room for a Sandbox, in words for its status.
type refusal struct{ reason, message string }

// roomFor decides whether a node holding load can take one more Sandbox of footprint need: nil if it can.
func roomFor(node string, capacity int, allocatable int64, load nodeLoad, need int64) *refusal {
	if load.count+1 > capacity {
		return &refusal{dsv1alpha1.ReasonNodeFull, fmt.Sprintf("node %s holds %d Sandboxes, its capacity; waiting for room", node, load.count)}
	}
	if load.memory+need <= allocatable {
		return nil
	}
	if need > allocatable {
		return &refusal{dsv1alpha1.ReasonInsufficientMemory, fmt.Sprintf(
			"this Sandbox needs %s of memory (limits and workspace), more than node %s can ever give (its allocatable memory is %s)",
			bytesForPeople(need), node, bytesForPeople(allocatable))}
	}
	return &refusal{dsv1alpha1.ReasonInsufficientMemory, fmt.Sprintf(
		"node %s has room for %s of memory, this Sandbox needs %s (limits and workspace); waiting for room",
		node, bytesForPeople(max(0, allocatable-load.memory)), bytesForPeople(need))}
}

// bytesForPeople writes a memory size as people read it: GiB with one decimal from 1 GiB up, else MiB.
func bytesForPeople(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
