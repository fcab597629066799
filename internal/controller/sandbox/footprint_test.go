package sandbox

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestFootprint(t *testing.T) {
	const mi = 1 << 20
	memory := func(q string) func(*dsv1alpha1.Sandbox) {
		return func(s *dsv1alpha1.Sandbox) { s.Spec.Resources.Memory = resource.MustParse(q) }
	}
	workspace := func(q string) func(*dsv1alpha1.Sandbox) {
		return func(s *dsv1alpha1.Sandbox) { s.Spec.Workspace.Size = resource.MustParse(q) }
	}
	services := func(names ...string) func(*dsv1alpha1.Sandbox) {
		return func(s *dsv1alpha1.Sandbox) { s.Spec.Services = names }
	}
	redis := newService("redis") // the default limit, 512Mi
	pg := newService("pg", func(s *dsv1alpha1.SandboxService) {
		s.Spec.Resources.Memory, s.Spec.Resources.CPU, s.Spec.Resources.Pids = resource.MustParse("256Mi"), resource.MustParse("2"), 32
	})
	for _, tc := range []struct {
		name     string
		sbx      *dsv1alpha1.Sandbox
		services []*dsv1alpha1.SandboxService
		want     Holding
	}{
		// The holder's 8Mi and 16 pids always; its CPU limit never (it only sleeps). A session's run volume 4Mi.
		{"defaults: 512Mi primary, 512Mi workspace, the holder's 8Mi, the run volume's 4Mi; 256 pids and 1 CPU", newSandbox("plain"), nil,
			Holding{Memory: 1036 * mi, Pids: 256 + 16, MilliCPU: 1000}},
		{"its own limits", newSandbox("sized", memory("1Gi"), workspace("2Gi"), limits("250m", 64)), nil,
			Holding{Memory: 3084 * mi, Pids: 64 + 16, MilliCPU: 250}},
		{"each service's limits", newSandbox("with", services("redis", "pg")), []*dsv1alpha1.SandboxService{redis, pg},
			Holding{Memory: (1036 + 512 + 256) * mi, Pids: 256 + 256 + 32 + 16, MilliCPU: 1000 + 1000 + 2000}},
		{"a missing service counts nothing until it exists", newSandbox("missing", services("redis", "gone")), []*dsv1alpha1.SandboxService{redis, nil},
			Holding{Memory: (1036 + 512) * mi, Pids: 256 + 256 + 16, MilliCPU: 2000}},
		{"scratch is within the container's limit", newSandbox("scratch", func(s *dsv1alpha1.Sandbox) {
			s.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/cache", Size: resource.MustParse("4Gi")}}
		}), nil, Holding{Memory: 1036 * mi, Pids: 256 + 16, MilliCPU: 1000}},
		{"a finished run keeps its workspace and holder", finished(newSandbox("done", run(), services("redis"))), []*dsv1alpha1.SandboxService{redis},
			Holding{Memory: 520 * mi, Pids: 16}},
		{"a poisoned session likewise, with its run volume", withCondition(newSandbox("poisoned", memory("2Gi")), dsv1alpha1.ConditionTopologyPoisoned, true, dsv1alpha1.ReasonDeadlineExceeded, "x"), nil,
			Holding{Memory: 524 * mi, Pids: 16}},
		{"a paused session holds it all", newSandbox("paused", func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecyclePaused }), nil,
			Holding{Memory: 1036 * mi, Pids: 256 + 16, MilliCPU: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := footprint(tc.sbx, tc.services); got != tc.want {
				t.Errorf("footprint = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// limits sets a Sandbox's CPU and pids limits.
func limits(cpu string, pids int64) func(*dsv1alpha1.Sandbox) {
	return func(s *dsv1alpha1.Sandbox) {
		s.Spec.Resources.CPU, s.Spec.Resources.Pids = resource.MustParse(cpu), pids
	}
}

func TestRoomFor(t *testing.T) {
	const gi = int64(1 << 30)
	mem := func(n int64) Holding { return Holding{Memory: n} }
	for _, tc := range []struct {
		name        string
		capacity    int
		allocatable Holding
		load        nodeLoad
		need        Holding
		reason      string // "" when admitted
		says        string
	}{
		{"room left", 3, mem(4 * gi), nodeLoad{1, mem(gi)}, mem(gi), "", ""},
		{"exactly full after it", 2, mem(2 * gi), nodeLoad{1, mem(gi)}, mem(gi), "", ""},
		{"the count is full", 2, mem(100 * gi), nodeLoad{2, mem(gi)}, mem(gi), dsv1alpha1.ReasonNodeFull, "node node-a holds 2 Sandboxes, its capacity"},
		{"the count goes first", 1, mem(gi), nodeLoad{1, mem(gi)}, mem(gi), dsv1alpha1.ReasonNodeFull, "holds 1 Sandboxes"},
		{"memory is short", 10, mem(8 * gi), nodeLoad{2, mem(4*gi + gi*4/5)}, mem(4*gi + gi/2), dsv1alpha1.ReasonInsufficientMemory,
			"node node-a has room for 3.2 GiB of memory, this Sandbox needs 4.5 GiB"},
		{"overcommitted already", 10, mem(gi), nodeLoad{2, mem(2 * gi)}, mem(520 << 20), dsv1alpha1.ReasonInsufficientMemory,
			"has room for 0 MiB of memory, this Sandbox needs 520 MiB"},
		{"more than the node ever has", 10, mem(2 * gi), nodeLoad{}, mem(3 * gi), dsv1alpha1.ReasonInsufficientMemory,
			"needs 3.0 GiB of memory (limits and workspace), more than node node-a can ever give (its allocatable memory is 2.0 GiB)"},
		{"pids and CPU fit too", 10, Holding{gi, 1000, 4000}, nodeLoad{1, Holding{gi / 2, 728, 3000}}, Holding{gi / 2, 272, 1000}, "", ""},
		{"pids are short", 10, Holding{gi, 1000, 4000}, nodeLoad{1, Holding{gi / 4, 800, 1000}}, Holding{gi / 4, 272, 1000}, dsv1alpha1.ReasonInsufficientPids,
			"node node-a has room for 200 pids, this Sandbox needs 272 pids (its containers' pids limits); waiting for room"},
		{"more pids than the node ever has", 10, Holding{gi, 1000, 4000}, nodeLoad{}, Holding{gi / 4, 1016, 1000}, dsv1alpha1.ReasonInsufficientPids,
			"this Sandbox needs 1016 pids (its containers' pids limits), more than node node-a can ever give (its allocatable pids are 1000 pids)"},
		{"CPU is short", 10, Holding{gi, 1000, 4000}, nodeLoad{1, Holding{gi / 4, 272, 3500}}, Holding{gi / 4, 272, 1000}, dsv1alpha1.ReasonInsufficientCPU,
			"node node-a has room for 500m CPU, this Sandbox needs 1 CPU (its containers' CPU limits); waiting for room"},
		{"memory goes before pids and CPU", 10, Holding{gi, 1000, 4000}, nodeLoad{1, Holding{gi, 1000, 4000}}, Holding{gi, 272, 1000}, dsv1alpha1.ReasonInsufficientMemory, "of memory"},
		{"a kind left at 0 is not counted", 10, mem(4 * gi), nodeLoad{1, Holding{gi, 1 << 40, 1 << 40}}, Holding{gi, 272, 1000}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roomFor(testNode, tc.capacity, tc.allocatable, tc.load, tc.need)
			expectRefusal(t, got, tc.reason, tc.says)
		})
	}
}

// TestTooLargeForNode: a container asking for more pids or CPUs than one container may have on the node is
// refused whatever the node holds; a service counts like the primary.
func TestTooLargeForNode(t *testing.T) {
	per := Holding{Pids: 4096, MilliCPU: 2000}
	big := newService("big", func(s *dsv1alpha1.SandboxService) { s.Spec.Resources.Pids = 8192 })
	for _, tc := range []struct {
		name     string
		per      Holding
		sbx      *dsv1alpha1.Sandbox
		services []*dsv1alpha1.SandboxService
		reason   string
		says     string
	}{
		{"within both", per, newSandbox("fits", limits("2", 4096)), nil, "", ""},
		{"too many pids", per, newSandbox("pids", limits("1", 4097)), nil, dsv1alpha1.ReasonInsufficientPids,
			"a container of this Sandbox asks for 4097 pids, more than node node-a allows one container (4096 pids, below the host's pid limit)"},
		{"too many CPUs", per, newSandbox("cpu", limits("2500m", 64)), nil, dsv1alpha1.ReasonInsufficientCPU,
			"a container of this Sandbox asks for 2500m CPU, more than node node-a has (2 CPU)"},
		{"a service asking too much", per, newSandbox("svc", func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"big"} }),
			[]*dsv1alpha1.SandboxService{big}, dsv1alpha1.ReasonInsufficientPids, "asks for 8192 pids"},
		{"no cap where left at 0", Holding{}, newSandbox("any", limits("64", 65536)), nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tooLargeForNode(testNode, tc.per, tc.sbx, tc.services)
			expectRefusal(t, got, tc.reason, tc.says)
		})
	}
}

// expectRefusal fails t unless got is nil where reason is "", else a refusal for reason whose message says says.
func expectRefusal(t *testing.T, got *refusal, reason, says string) {
	t.Helper()
	switch {
	case reason == "" && got != nil:
		t.Fatalf("refused: %+v", *got)
	case reason == "":
	case got == nil:
		t.Fatalf("admitted, want %s", reason)
	case got.reason != reason || !strings.Contains(got.message, says):
		t.Fatalf("refused %s %q, want %s saying %q", got.reason, got.message, reason, says)
	}
}
