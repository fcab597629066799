package warmpool

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// member is a warm Sandbox of template hash h, Ready or not.
func member(name, h string, isReady bool) *dsv1alpha1.Sandbox {
	s := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{dsv1alpha1.LabelTemplateHash: h}}}
	if isReady {
		s.Status.Conditions = []metav1.Condition{{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	}
	return s
}

func names(sbxs []*dsv1alpha1.Sandbox) []string {
	var out []string
	for _, s := range sbxs {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func TestPlan(t *testing.T) {
	pool := func(replicas, maxStarting int32, strategy dsv1alpha1.PoolUpdateStrategy) *dsv1alpha1.SandboxWarmPool {
		return &dsv1alpha1.SandboxWarmPool{Spec: dsv1alpha1.SandboxWarmPoolSpec{Replicas: replicas, MaxStarting: maxStarting, UpdateStrategy: strategy}}
	}
	for _, tc := range []struct {
		name       string
		pool       *dsv1alpha1.SandboxWarmPool
		members    []*dsv1alpha1.Sandbox
		waiting    int
		wantRemove []string
		wantCreate int
	}{
		{"an empty pool starts at most maxStarting", pool(5, 2, ""), nil, 0, nil, 2},
		{"starting members count against maxStarting", pool(5, 2, ""), []*dsv1alpha1.Sandbox{member("p-0", "new", false)}, 0, nil, 1},
		{"a full pool does nothing", pool(2, 4, ""), []*dsv1alpha1.Sandbox{member("p-0", "new", true), member("p-1", "new", true)}, 0, nil, 0},
		{"a smaller pool gives up the not ready and the highest first", pool(1, 4, ""),
			[]*dsv1alpha1.Sandbox{member("p-0", "new", true), member("p-1", "new", true), member("p-2", "new", false)}, 0, []string{"p-1", "p-2"}, 0},
		{"rolling keeps old ones until new ones are ready", pool(2, 4, dsv1alpha1.PoolRolling),
			[]*dsv1alpha1.Sandbox{member("p-0", "old", true), member("p-1", "old", true)}, 0, nil, 2},
		{"rolling lets an old one go per new one ready", pool(2, 4, dsv1alpha1.PoolRolling),
			[]*dsv1alpha1.Sandbox{member("p-0", "old", true), member("p-1", "old", true), member("p-2", "new", true), member("p-3", "new", false)}, 0, []string{"p-1"}, 0},
		{"on replenish old ones stay to be claimed", pool(2, 4, dsv1alpha1.PoolOnReplenish),
			[]*dsv1alpha1.Sandbox{member("p-0", "old", true), member("p-1", "old", true)}, 0, nil, 0},
		{"on replenish a refill uses the new template", pool(2, 4, dsv1alpha1.PoolOnReplenish),
			[]*dsv1alpha1.Sandbox{member("p-0", "old", true)}, 0, nil, 1},
		{"a waiting Sandbox takes one member and stops refills", pool(2, 4, ""),
			[]*dsv1alpha1.Sandbox{member("p-0", "new", true), member("p-1", "new", true)}, 1, []string{"p-1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(tc.pool, tc.members, "new", tc.waiting)
			if got := names(p.remove); !slices.Equal(got, tc.wantRemove) {
				t.Errorf("remove %v, want %v", got, tc.wantRemove)
			}
			if p.create != tc.wantCreate {
				t.Errorf("create %d, want %d", p.create, tc.wantCreate)
			}
		})
	}
}
