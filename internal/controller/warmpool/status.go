package warmpool

import (
	"fmt"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// setPoolStatus counts the members as the pass found them (its own creates and deletes show in the next
// pass) and summarizes: Ready when as many are available as asked.
func setPoolStatus(pool *dsv1alpha1.SandboxWarmPool, members []*dsv1alpha1.Sandbox, hash string, waiting int) {
	st := &pool.Status
	st.TemplateHash = hash
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas = int32(len(members)), 0, 0
	for _, sbx := range members {
		if ready(sbx) {
			st.ReadyReplicas++
			if sbx.Labels[dsv1alpha1.LabelTemplateHash] == hash {
				st.AvailableReplicas++
			}
		}
	}
	switch {
	case waiting > 0:
		status.Summarize(pool, status.Summary{Reason: dsv1alpha1.ReasonYieldingRoom,
			Message: fmt.Sprintf("%d Sandbox(es) wait for room: the pool starts none and gives up its warm ones", waiting)})
	case st.AvailableReplicas >= pool.Spec.Replicas && st.Replicas == pool.Spec.Replicas:
		status.Summarize(pool, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonFilled,
			Message: fmt.Sprintf("%d warm Sandbox(es) ready to claim", st.AvailableReplicas)})
	default:
		status.Summarize(pool, status.Summary{Reason: dsv1alpha1.ReasonFilling,
			Message: fmt.Sprintf("%d of %d warm Sandbox(es) ready from the current template", st.AvailableReplicas, pool.Spec.Replicas)})
	}
}
