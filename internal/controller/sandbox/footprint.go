package sandbox

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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

// The pids limits of its containers count like their memory, the holder's always and the others' while the
// topology may run: every process of every container takes one of the kernel's pids, and a node whose pids
// run out can start nothing, the host's own processes included. Their CPU limits count only while the
// topology may run, not the holder's: it only sleeps, and a CPU limit is a ceiling, not a reservation
// (docs/agent.md, "Room on a node").

// Holding is what a Sandbox holds on its node, or what several add up to.
type Holding struct {
	Memory   int64 // bytes
	Pids     int64 // the containers' pids limits
	MilliCPU int64 // the containers' CPU limits, in thousandths of a CPU
}

func (h Holding) plus(o Holding) Holding {
	return Holding{Memory: h.Memory + o.Memory, Pids: h.Pids + o.Pids, MilliCPU: h.MilliCPU + o.MilliCPU}
}

// footprint is what the Sandbox holds on its node; services are the SandboxServices it names, in spec
// order, nil where one does not exist.
func footprint(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) Holding {
	h := Holding{
		Memory: topology.WorkspaceBytes(sbx.Spec.Workspace) + topology.HolderLimits.MemoryBytes + secretFilesFootprint(sbx.Spec) +
			runVolumeFootprint(sbx.Spec),
		Pids: topology.HolderLimits.PIDs,
	}
	if topology.Settled(sbx) {
		return h
	}
	for _, res := range containerResources(sbx, services) {
		h = h.plus(limitsHeld(res))
	}
	return h
}

// containerResources are the resources of the Sandbox's primary and of each of its services that exist.
func containerResources(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) []dsv1alpha1.Resources {
	out := []dsv1alpha1.Resources{sbx.Spec.Resources}
	for _, svc := range services {
		if svc != nil {
			out = append(out, svc.Spec.Resources)
		}
	}
	return out
}

// limitsHeld is what one container's limits hold, the defaults where a field was left out.
func limitsHeld(res dsv1alpha1.Resources) Holding {
	l := topology.Limits(res)
	return Holding{Memory: l.MemoryBytes, Pids: l.PIDs, MilliCPU: l.NanoCPUs / 1_000_000}
}

// footprintOf is footprint with the SandboxServices read from the cache.
func (r *Reconciler) footprintOf(ctx context.Context, sbx *dsv1alpha1.Sandbox) (Holding, []*dsv1alpha1.SandboxService, error) {
	services := make([]*dsv1alpha1.SandboxService, len(sbx.Spec.Services))
	for i, name := range sbx.Spec.Services {
		svc := &dsv1alpha1.SandboxService{}
		switch err := r.Get(ctx, types.NamespacedName{Namespace: sbx.Namespace, Name: name}, svc); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return Holding{}, nil, fmt.Errorf("reading SandboxService %s: %w", name, err)
		default:
			services[i] = svc
		}
	}
	return footprint(sbx, services), services, nil
}

// nodeLoad is what the Sandboxes a node holds add up to.
type nodeLoad struct {
	count   int // Sandboxes
	Holding     // their footprints
}

// refusal says why a node has no room for a Sandbox, in words for its status.
type refusal struct{ reason, message string }

// measure is one kind of room, and the words of its refusals.
type measure struct {
	reason string
	of     func(Holding) int64
	say    func(int64) string // an amount, as people read it
	// short is the refusal when the node has too little left: node, room left, need; never when the Sandbox
	// needs more than the node has in all: need, node, allocatable.
	short, never string
}

// measures are the kinds of room admission counts, in the order it looks at them.
var measures = []measure{
	{dsv1alpha1.ReasonInsufficientMemory, func(h Holding) int64 { return h.Memory }, bytesForPeople,
		"node %s has room for %s of memory, this Sandbox needs %s (limits and workspace); waiting for room",
		"this Sandbox needs %s of memory (limits and workspace), more than node %s can ever give (its allocatable memory is %s)"},
	{dsv1alpha1.ReasonInsufficientPids, func(h Holding) int64 { return h.Pids }, pidsForPeople,
		"node %s has room for %s, this Sandbox needs %s (its containers' pids limits); waiting for room",
		"this Sandbox needs %s (its containers' pids limits), more than node %s can ever give (its allocatable pids are %s)"},
	{dsv1alpha1.ReasonInsufficientCPU, func(h Holding) int64 { return h.MilliCPU }, cpuForPeople,
		"node %s has room for %s, this Sandbox needs %s (its containers' CPU limits); waiting for room",
		"this Sandbox needs %s (its containers' CPU limits), more than node %s can ever give (its allocatable CPU is %s)"},
}

// roomFor decides whether a node holding load can take one more Sandbox that needs need: nil if it can. A
// kind of room the node's allocatable leaves at 0 is not counted.
func roomFor(node string, capacity int, allocatable Holding, load nodeLoad, need Holding) *refusal {
	if load.count+1 > capacity {
		return &refusal{dsv1alpha1.ReasonNodeFull, fmt.Sprintf("node %s holds %d Sandboxes, its capacity; waiting for room", node, load.count)}
	}
	for _, m := range measures {
		all, has, wants := m.of(allocatable), m.of(load.Holding), m.of(need)
		switch {
		case all == 0 || has+wants <= all:
		case wants > all:
			return &refusal{m.reason, fmt.Sprintf(m.never, m.say(wants), node, m.say(all))}
		default:
			return &refusal{m.reason, fmt.Sprintf(m.short, node, m.say(max(0, all-has)), m.say(wants))}
		}
	}
	return nil
}

// tooLargeForNode is why one of the Sandbox's containers asks for more than any container may have on the
// node (perContainer; a kind left at 0 is not capped), nil if none does: more pids than the host keeps
// spare, more CPUs than it has.
func tooLargeForNode(node string, perContainer Holding, sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) *refusal {
	for _, res := range containerResources(sbx, services) {
		asks := limitsHeld(res)
		if perContainer.Pids > 0 && asks.Pids > perContainer.Pids {
			return &refusal{dsv1alpha1.ReasonInsufficientPids, fmt.Sprintf(
				"a container of this Sandbox asks for %s, more than node %s allows one container (%s, below the host's pid limit)",
				pidsForPeople(asks.Pids), node, pidsForPeople(perContainer.Pids))}
		}
		if perContainer.MilliCPU > 0 && asks.MilliCPU > perContainer.MilliCPU {
			return &refusal{dsv1alpha1.ReasonInsufficientCPU, fmt.Sprintf(
				"a container of this Sandbox asks for %s, more than node %s has (%s)",
				cpuForPeople(asks.MilliCPU), node, cpuForPeople(perContainer.MilliCPU))}
		}
	}
	return nil
}

func pidsForPeople(n int64) string { return fmt.Sprintf("%d pids", n) }

// cpuForPeople writes thousandths of a CPU as a quantity (1500m, 2).
func cpuForPeople(milli int64) string {
	return resource.NewMilliQuantity(milli, resource.DecimalSI).String() + " CPU"
}

// bytesForPeople writes a memory size as people read it: GiB with one decimal from 1 GiB up, else MiB.
func bytesForPeople(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}
