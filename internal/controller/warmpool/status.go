package warmpool

import (
	"fmt"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// setPoolStatus counts the members as the pass found them (its own creates and deletes show in the next
// pass) and summarizes: Ready when as many are available as asked, on each node with scope Node.
func setPoolStatus(pool *dsv1alpha1.SandboxWarmPool, members []*dsv1alpha1.Sandbox, hash string, waiting int) {
	st := &pool.Status
	st.TemplateHash = hash
	all := countMembers(members, hash)
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = all.members, all.ready, all.available
	switch {
	case waiting > 0:
		status.Summarize(pool, status.Summary{Reason: dsv1alpha1.ReasonYieldingRoom,
			Message: fmt.Sprintf("%d Sandbox(es) wait for room: the pool starts none and gives up its warm ones", waiting)})
	case pool.Spec.Scope == dsv1alpha1.PoolNode:
		summarizeNodes(pool, members, hash)
	case all.filled(pool.Spec.Replicas):
		status.Summarize(pool, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonFilled,
			Message: fmt.Sprintf("%d warm Sandbox(es) ready to claim", st.AvailableReplicas)})
	default:
		status.Summarize(pool, status.Summary{Reason: dsv1alpha1.ReasonFilling,
			Message: fmt.Sprintf("%d of %d warm Sandbox(es) ready from the current template", st.AvailableReplicas, pool.Spec.Replicas)})
	}
}

// summarizeNodes is the Ready condition of a pool with scope Node: filled when every node that holds members
// holds replicas of them, all available. Nodes are known by their members: a node whose agent has made none
// yet is not counted until it has (docs/design/pools.md).
func summarizeNodes(pool *dsv1alpha1.SandboxWarmPool, members []*dsv1alpha1.Sandbox, hash string) {
	byNode := map[string][]*dsv1alpha1.Sandbox{}
	for _, sbx := range members {
		byNode[sbx.Spec.NodeName] = append(byNode[sbx.Spec.NodeName], sbx)
	}
	filled := 0
	for _, on := range byNode {
		if countMembers(on, hash).filled(pool.Spec.Replicas) {
			filled++
		}
	}
	if filled == len(byNode) && (filled > 0 || pool.Spec.Replicas == 0) {
		status.Summarize(pool, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonFilled,
			Message: fmt.Sprintf("%d warm Sandbox(es) ready to claim on each of %d node(s)", pool.Spec.Replicas, filled)})
		return
	}
	status.Summarize(pool, status.Summary{Reason: dsv1alpha1.ReasonFilling,
		Message: fmt.Sprintf("%d of %d node(s) hold %d warm Sandbox(es) ready from the current template", filled, len(byNode), pool.Spec.Replicas)})
}

// memberCounts counts members: all, Ready (of any template version), and available (Ready, of the current
// template).
type memberCounts struct{ members, ready, available int32 }

func countMembers(members []*dsv1alpha1.Sandbox, hash string) memberCounts {
	c := memberCounts{members: int32(len(members))}
	for _, sbx := range members {
		if ready(sbx) {
			c.ready++
			if sbx.Labels[dsv1alpha1.LabelTemplateHash] == hash {
				c.available++
			}
		}
	}
	return c
}

// filled tells whether the members are exactly replicas, all available.
func (c memberCounts) filled(replicas int32) bool {
	return c.available >= replicas && c.members == replicas
}
