// Package status is how every Dockside reconciler writes status: conditions set the same way, Ready,
// Reconciling and Stalled always together, and one write per pass guarded by the resourceVersion the pass
// started from (docs/design/status.md, "Status discipline").
package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Object is a Dockside object whose status the agent writes.
type Object interface {
	client.Object
	StatusValue() any                      // the whole status, compared before and after a pass
	StatusConditions() *[]metav1.Condition // the status's conditions
	SetObservedGeneration(generation int64)
}

// Set sets one condition, observed at the object's generation.
func Set(obj Object, typ string, on bool, reason, message string) {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(obj.StatusConditions(), metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: message, ObservedGeneration: obj.GetGeneration(),
	})
}

// SetDefault sets a condition to False only when it is absent, so that the steps that set its True side
// own it; a present one is only marked observed at the current generation.
func SetDefault(obj Object, typ, reason, message string) {
	if c := meta.FindStatusCondition(*obj.StatusConditions(), typ); c != nil {
		c.ObservedGeneration = obj.GetGeneration()
		return
	}
	Set(obj, typ, false, reason, message)
}

// IsTrue tells whether the condition is present and True.
func IsTrue(obj Object, typ string) bool {
	return meta.IsStatusConditionTrue(*obj.StatusConditions(), typ)
}

// Summary is where a pass left an object, as kstatus reads it: Ready, still Reconciling, or Stalled (failed
// for good until the spec or the world changes). Reconciling is True exactly when neither of the others is.
type Summary struct {
	Ready   bool
	Stalled bool
	Reason  string
	Message string
}

// Summarize writes Ready, Reconciling and Stalled from one summary, with one reason and message, so that
// they never disagree.
func Summarize(obj Object, s Summary) {
	Set(obj, dsv1alpha1.ConditionReady, s.Ready, s.Reason, s.Message)
	Set(obj, dsv1alpha1.ConditionReconciling, !s.Ready && !s.Stalled, s.Reason, s.Message)
	Set(obj, dsv1alpha1.ConditionStalled, s.Stalled, s.Reason, s.Message)
}
