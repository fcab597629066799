package status

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// NodeLostTypes are the conditions another node's agent may write on a Sandbox of a lost node, and the only
// ones (config/rbac/agent_confinement.yaml holds it to them).
var NodeLostTypes = []string{dsv1alpha1.ConditionNodeLost, dsv1alpha1.ConditionReady, dsv1alpha1.ConditionReconciling, dsv1alpha1.ConditionStalled}

// MarkNodeLost says on obj that its node's agent has not renewed its Lease since renewed: NodeLost=True,
// Ready=Unknown and Reconciling=True (kstatus InProgress: the node may come back, like a pod on an unreachable
// node), Stalled=False. Nothing else of obj changes. It reports false when obj already says so.
func MarkNodeLost(obj Object, node string, renewed time.Time) bool {
	if c := meta.FindStatusCondition(*obj.StatusConditions(), dsv1alpha1.ConditionNodeLost); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == dsv1alpha1.ReasonLeaseExpired {
		return false
	}
	since := "it never renewed it"
	if !renewed.IsZero() {
		since = "last renewed " + renewed.UTC().Format(time.RFC3339)
	}
	lost := fmt.Sprintf("the agent of node %s stopped renewing its Lease (%s); nothing is known of the Sandbox's containers until it is back, "+
		"and a deletion waits for it to remove them (docs/deploy.md, \"When a host is lost\")", node, since)
	Set(obj, dsv1alpha1.ConditionNodeLost, true, dsv1alpha1.ReasonLeaseExpired, lost)
	unknown := fmt.Sprintf("node %s is lost: its agent stopped renewing its Lease (%s)", node, since)
	meta.SetStatusCondition(obj.StatusConditions(), metav1.Condition{
		Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: dsv1alpha1.ReasonNodeLost, Message: unknown,
		ObservedGeneration: obj.GetGeneration(),
	})
	Set(obj, dsv1alpha1.ConditionReconciling, true, dsv1alpha1.ReasonNodeLost, unknown)
	Set(obj, dsv1alpha1.ConditionStalled, false, dsv1alpha1.ReasonNodeLost, unknown)
	return true
}

// ClearNodeLost is the node's own agent saying it is back: a NodeLost=True becomes False (reason
// LeaseRenewed), kept so that the loss stays on record; the pass then writes Ready, Reconciling and Stalled
// from what Docker holds. An object never marked lost gets no NodeLost condition.
func ClearNodeLost(obj Object, node string) {
	if IsTrue(obj, dsv1alpha1.ConditionNodeLost) {
		Set(obj, dsv1alpha1.ConditionNodeLost, false, dsv1alpha1.ReasonLeaseRenewed,
			fmt.Sprintf("the agent of node %s renews its Lease again and has looked at the Sandbox's containers", node))
	}
}
