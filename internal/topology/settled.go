package topology

import (
	"k8s.io/apimachinery/pkg/api/meta"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Poisoned tells whether the Sandbox's current topology is poisoned (TopologyPoisoned).
func Poisoned(sbx *dsv1alpha1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionTopologyPoisoned)
}

// Settled tells whether the current topology has ended for good: a run that finished, a session stopped
// at its deadline, or a poisoned topology. Such a topology is never restarted, only rolled by a spec change.
func Settled(sbx *dsv1alpha1.Sandbox) bool {
	return sbx.Status.FinishTime != nil || Poisoned(sbx)
}
