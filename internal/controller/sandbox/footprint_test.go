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
	pg := newService("pg", func(s *dsv1alpha1.SandboxService) { s.Spec.Resources.Memory = resource.MustParse("256Mi") })
	for _, tc := range []struct {
		name     string
		sbx      *dsv1alpha1.Sandbox
		services []*dsv1alpha1.SandboxService
		want     int64
	}{
		{"defaults: 512Mi primary, 512Mi workspace, the holder's 8Mi", newSandbox("plain"), nil, 1032 * mi},
		{"its own limits", newSandbox("sized", memory("1Gi"), workspace("2Gi")), nil, 3080 * mi},
		{"each service's limit", newSandbox("with", services("redis", "pg")), []*dsv1alpha1.SandboxService{redis, pg}, (1032 + 512 + 256) * mi},
		{"a missing service counts nothing until it exists", newSandbox("missing", services("redis", "gone")), []*dsv1alpha1.SandboxService{redis, nil}, (1032 + 512) * mi},
		{"scratch is within the container's limit", newSandbox("scratch", func(s *dsv1alpha1.Sandbox) {
			s.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/cache", Size: resource.MustParse("4Gi")}}
		}), nil, 1032 * mi},
		{"a finished run keeps its workspace and holder", finished(newSandbox("done", run(), services("redis"))), []*dsv1alpha1.SandboxService{redis}, 520 * mi},
		{"a poisoned session likewise", withCondition(newSandbox("poisoned", memory("2Gi")), dsv1alpha1.ConditionTopologyPoisoned, true, dsv1alpha1.ReasonDeadlineExceeded, "x"), nil, 520 * mi},
		{"a paused session holds it all", newSandbox("paused", func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecyclePaused }), nil, 1032 * mi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := footprint(tc.sbx, tc.services); got != tc.want {
				t.Errorf("footprint = %d MiB, want %d MiB", got/mi, tc.want/mi)
			}
		})
	}
}

func TestRoomFor(t *testing.T) {
	const gi = int64(1 << 30)
	for _, tc := range []struct {
		name        string
		capacity    int
		allocatable int64
		load        nodeLoad
		need        int64
		reason      string // "" when admitted
		says        string
	}{
		{"room left", 3, 4 * gi, nodeLoad{count: 1, memory: gi}, gi, "", ""},
		{"exactly full after it", 2, 2 * gi, nodeLoad{count: 1, memory: gi}, gi, "", ""},
		{"the count is full", 2, 100 * gi, nodeLoad{count: 2, memory: gi}, gi, dsv1alpha1.ReasonNodeFull, "node node-a holds 2 Sandboxes, its capacity"},
		{"the count goes first", 1, gi, nodeLoad{count: 1, memory: gi}, gi, dsv1alpha1.ReasonNodeFull, "holds 1 Sandboxes"},
		{"memory is short", 10, 8 * gi, nodeLoad{count: 2, memory: 4*gi + gi*4/5}, 4*gi + gi/2, dsv1alpha1.ReasonInsufficientMemory,
			"node node-a has room for 3.2 GiB of memory, this Sandbox needs 4.5 GiB"},
		{"overcommitted already", 10, gi, nodeLoad{count: 2, memory: 2 * gi}, 520 << 20, dsv1alpha1.ReasonInsufficientMemory,
			"has room for 0 MiB of memory, this Sandbox needs 520 MiB"},
		{"more than the node ever has", 10, 2 * gi, nodeLoad{}, 3 * gi, dsv1alpha1.ReasonInsufficientMemory,
			"needs 3.0 GiB of memory (limits and workspace), more than node node-a can ever give (its allocatable memory is 2.0 GiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roomFor(testNode, tc.capacity, tc.allocatable, tc.load, tc.need)
			switch {
			case tc.reason == "" && got != nil:
				t.Fatalf("refused: %+v", *got)
			case tc.reason == "":
			case got == nil:
				t.Fatalf("admitted, want %s", tc.reason)
			case got.reason != tc.reason || !strings.Contains(got.message, tc.says):
				t.Fatalf("refused %s %q, want %s saying %q", got.reason, got.message, tc.reason, tc.says)
			}
		})
	}
}
