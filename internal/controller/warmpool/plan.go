package warmpool

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// poolPlan is what a pass does: the members to delete and how many to create.
type poolPlan struct {
	remove []*dsv1alpha1.Sandbox
	create int
}

// plan decides from the members alone, so that every agent decides the same. While Sandboxes of no pool wait
// for room, it creates none and gives up one member per waiting Sandbox. Otherwise it keeps spec.replicas
// members of the current template, at most maxStarting of them starting at once; members of an older
// template go as the new ones become ready (Rolling), or stay to be claimed (OnReplenish).
func plan(pool *dsv1alpha1.SandboxWarmPool, members []*dsv1alpha1.Sandbox, hash string, waiting int) poolPlan {
	members = slices.Clone(members)
	slices.SortFunc(members, leastUseful(hash))
	want := int(pool.Spec.Replicas)
	if waiting > 0 {
		return poolPlan{remove: members[:min(waiting, len(members))]}
	}
	var current, stale []*dsv1alpha1.Sandbox
	readyCurrent, starting := 0, 0
	for _, sbx := range members {
		switch {
		case sbx.Labels[dsv1alpha1.LabelTemplateHash] != hash:
			stale = append(stale, sbx)
		case ready(sbx):
			current, readyCurrent = append(current, sbx), readyCurrent+1
		default:
			current, starting = append(current, sbx), starting+1
		}
	}
	var p poolPlan
	need := 0
	if pool.Spec.UpdateStrategy == dsv1alpha1.PoolOnReplenish {
		// Stale members count as members until claimed; a smaller pool gives them up first.
		p.remove = members[:max(0, len(members)-want)]
		need = want - len(members)
	} else {
		keepStale := min(len(stale), max(0, want-readyCurrent))
		p.remove = append(stale[:len(stale)-keepStale], current[:max(0, len(current)-want)]...)
		need = want - len(current)
	}
	p.create = max(0, min(need, int(max(pool.Spec.MaxStarting, 1))-starting))
	return p
}

// leastUseful orders members from the first to give up to the last: of an older template, then not ready,
// then the most recently named (the highest index).
func leastUseful(hash string) func(a, b *dsv1alpha1.Sandbox) int {
	rank := func(s *dsv1alpha1.Sandbox) int {
		r := 0
		if s.Labels[dsv1alpha1.LabelTemplateHash] == hash {
			r += 2
		}
		if ready(s) {
			r++
		}
		return r
	}
	return func(a, b *dsv1alpha1.Sandbox) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 {
			return c
		}
		if c := cmp.Compare(len(b.Name), len(a.Name)); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	}
}

// ready tells whether a Sandbox's Ready condition is True: started and ready to be claimed.
func ready(sbx *dsv1alpha1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
}

func findCondition(sbx *dsv1alpha1.Sandbox, typ string) *metav1.Condition {
	return meta.FindStatusCondition(sbx.Status.Conditions, typ)
}
