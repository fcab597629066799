package warmpool

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// on binds a member to node.
func on(node string, s *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	s.Spec.NodeName = node
	return s
}

func TestPoolStatusPerNode(t *testing.T) {
	perNode := func(replicas int32) *dsv1alpha1.SandboxWarmPool {
		return &dsv1alpha1.SandboxWarmPool{Spec: dsv1alpha1.SandboxWarmPoolSpec{Replicas: replicas, Scope: dsv1alpha1.PoolNode}}
	}
	for _, tc := range []struct {
		name       string
		pool       *dsv1alpha1.SandboxWarmPool
		members    []*dsv1alpha1.Sandbox
		wantReady  bool
		wantCounts [3]int32 // replicas, ready, available
	}{
		{"every node holding members filled", perNode(1),
			[]*dsv1alpha1.Sandbox{on("a", member("p-0", "new", true)), on("b", member("p-1", "new", true))}, true, [3]int32{2, 2, 2}},
		{"one node short", perNode(2),
			[]*dsv1alpha1.Sandbox{on("a", member("p-0", "new", true)), on("a", member("p-1", "new", true)), on("b", member("p-2", "new", true))}, false, [3]int32{3, 3, 3}},
		{"one node's member of the old template", perNode(1),
			[]*dsv1alpha1.Sandbox{on("a", member("p-0", "new", true)), on("b", member("p-1", "old", true))}, false, [3]int32{2, 2, 1}},
		{"no node yet", perNode(1), nil, false, [3]int32{0, 0, 0}},
		{"nothing asked", perNode(0), nil, true, [3]int32{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setPoolStatus(tc.pool, tc.members, "new", 0)
			st := tc.pool.Status
			if got := [3]int32{st.Replicas, st.ReadyReplicas, st.AvailableReplicas}; got != tc.wantCounts {
				t.Errorf("replicas/ready/available %v, want %v", got, tc.wantCounts)
			}
			if got := meta.IsStatusConditionTrue(st.Conditions, dsv1alpha1.ConditionReady); got != tc.wantReady {
				t.Errorf("Ready %v, want %v (%v)", got, tc.wantReady, st.Conditions)
			}
		})
	}
}

func TestCountedPerNode(t *testing.T) {
	members := []*dsv1alpha1.Sandbox{on("a", member("p-0", "new", true)), on("b", member("p-1", "new", true)), member("p-2", "new", false)}
	r := &Reconciler{Options: Options{Node: "a"}}
	pool := &dsv1alpha1.SandboxWarmPool{}
	if got := names(r.counted(pool, members)); len(got) != 3 {
		t.Errorf("a cluster-wide pool counts %v, want all three", got)
	}
	pool.Spec.Scope = dsv1alpha1.PoolNode
	if got := names(r.counted(pool, members)); len(got) != 1 || got[0] != "p-0" {
		t.Errorf("a per-node pool counts %v on node a, want [p-0]", got)
	}
}
