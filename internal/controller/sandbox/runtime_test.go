package sandbox

import (
	"testing"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// A Sandbox needs every runtime its containers name, once each; a missing service names none.
func TestRuntimesAsked(t *testing.T) {
	sbx := &dsv1alpha1.Sandbox{Spec: dsv1alpha1.SandboxSpec{Runtime: dsv1alpha1.RuntimeRunc}}
	gvisorDB := newService("db", func(s *dsv1alpha1.SandboxService) { s.Spec.Runtime = dsv1alpha1.RuntimeGVisor })
	plain := newService("cache")
	got := runtimesAsked(sbx, []*dsv1alpha1.SandboxService{gvisorDB, nil, plain, gvisorDB})
	if len(got) != 2 || got[0] != dsv1alpha1.RuntimeRunc || got[1] != dsv1alpha1.RuntimeGVisor {
		t.Fatalf("runtimes asked: %v, want [runc gVisor]", got)
	}
	if got := runtimesAsked(&dsv1alpha1.Sandbox{}, []*dsv1alpha1.SandboxService{plain}); len(got) != 0 {
		t.Fatalf("a Sandbox naming no runtime asks for none, got %v", got)
	}

	r := &Reconciler{Options: Options{Node: "node-a"}} // the zero runtimes: runc alone
	if rt := r.missingRuntime(sbx, []*dsv1alpha1.SandboxService{gvisorDB}); rt != dsv1alpha1.RuntimeGVisor {
		t.Fatalf("missing runtime: %q, want gVisor (a service's)", rt)
	}
	both, err := runtimes.Discover([]string{"runc", "runsc"}, "runsc", "")
	if err != nil {
		t.Fatal(err)
	}
	r.Options.Runtimes = runtimes.NewLive(both)
	if rt := r.missingRuntime(sbx, []*dsv1alpha1.SandboxService{gvisorDB}); rt != "" {
		t.Fatalf("missing runtime: %q on a node offering both", rt)
	}

	// A gVisor node whose daemon dropped runsc: what names no runtime needs the default it no longer offers.
	gvisorNode, err := runtimes.Discover([]string{"runc", "runsc"}, "runsc", dsv1alpha1.RuntimeGVisor)
	if err != nil {
		t.Fatal(err)
	}
	live := runtimes.NewLive(gvisorNode)
	r.Options.Runtimes = live
	if rt := r.missingRuntime(&dsv1alpha1.Sandbox{}, []*dsv1alpha1.SandboxService{plain}); rt != "" {
		t.Fatalf("missing runtime: %q while the default is offered", rt)
	}
	live.Set(runtimes.Reread([]string{"runc"}, "runsc", dsv1alpha1.RuntimeGVisor))
	if rt := r.missingRuntime(&dsv1alpha1.Sandbox{}, []*dsv1alpha1.SandboxService{plain}); rt != dsv1alpha1.RuntimeGVisor {
		t.Fatalf("missing runtime: %q, want gVisor, the default the daemon dropped", rt)
	}
	if rt := r.missingRuntime(sbx, nil); rt != "" {
		t.Fatalf("missing runtime: %q for a Sandbox naming runc", rt)
	}
}

// Every agent without room writes the same words, naming the runtimes the Sandbox needs.
func TestNoRoomWords(t *testing.T) {
	need := Holding{Memory: 1 << 30}
	if got, want := noRoomWords(&dsv1alpha1.Sandbox{}, nil, need).message,
		"waiting for an agent with room for one more Sandbox and 1.0 GiB of memory"; got != want {
		t.Errorf("without a runtime: %q, want %q", got, want)
	}
	gv := &dsv1alpha1.Sandbox{Spec: dsv1alpha1.SandboxSpec{Runtime: dsv1alpha1.RuntimeGVisor}}
	if got, want := noRoomWords(gv, nil, need).message,
		"waiting for an agent offering runtime gVisor and with room for one more Sandbox and 1.0 GiB of memory"; got != want {
		t.Errorf("with gVisor: %q, want %q", got, want)
	}
}
