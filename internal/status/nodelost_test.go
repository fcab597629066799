package status

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestMarkNodeLost(t *testing.T) {
	g := NewWithT(t)
	obj := at(2)
	Summarize(obj, Summary{Ready: true, Reason: dsv1alpha1.ReasonRunning, Message: "up"})
	Set(obj, dsv1alpha1.ConditionScheduled, true, dsv1alpha1.ReasonBound, "bound to node n1")
	scheduled := *meta.FindStatusCondition(obj.Status.Conditions, dsv1alpha1.ConditionScheduled)
	renewed := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)

	g.Expect(MarkNodeLost(obj, "n1", renewed)).To(BeTrue())
	lost := meta.FindStatusCondition(obj.Status.Conditions, dsv1alpha1.ConditionNodeLost)
	g.Expect(lost.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(lost.Reason).To(Equal(dsv1alpha1.ReasonLeaseExpired))
	g.Expect(lost.Message).To(ContainSubstring("node n1"))
	g.Expect(lost.Message).To(ContainSubstring("2026-12-01T21:00:00Z"))
	ready := meta.FindStatusCondition(obj.Status.Conditions, dsv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(ready.Reason).To(Equal(dsv1alpha1.ReasonNodeLost))
	g.Expect(IsTrue(obj, dsv1alpha1.ConditionReconciling)).To(BeTrue(), "kstatus reads InProgress, not Current")
	g.Expect(IsTrue(obj, dsv1alpha1.ConditionStalled)).To(BeFalse(), "nor Failed")
	g.Expect(*meta.FindStatusCondition(obj.Status.Conditions, dsv1alpha1.ConditionScheduled)).To(Equal(scheduled), "nothing else changes")
	var types []string
	for _, c := range obj.Status.Conditions {
		types = append(types, c.Type)
	}
	g.Expect(types).To(ConsistOf(append([]string{dsv1alpha1.ConditionScheduled}, NodeLostTypes...)), "only the conditions the confinement allows")

	before := obj.DeepCopy()
	g.Expect(MarkNodeLost(obj, "n1", renewed.Add(time.Hour))).To(BeFalse(), "already marked: no second write")
	g.Expect(obj.Status).To(Equal(before.Status))
}

func TestMarkNodeLostNeverRenewed(t *testing.T) {
	g := NewWithT(t)
	obj := at(1)
	g.Expect(MarkNodeLost(obj, "n2", time.Time{})).To(BeTrue())
	g.Expect(meta.FindStatusCondition(obj.Status.Conditions, dsv1alpha1.ConditionNodeLost).Message).To(ContainSubstring("never renewed"))
}

func TestClearNodeLost(t *testing.T) {
	g := NewWithT(t)
	obj := at(1)
	ClearNodeLost(obj, "n1")
	g.Expect(obj.Status.Conditions).To(BeEmpty(), "a Sandbox never marked lost gets no NodeLost")

	MarkNodeLost(obj, "n1", time.Now())
	ClearNodeLost(obj, "n1")
	lost := meta.FindStatusCondition(obj.Status.Conditions, dsv1alpha1.ConditionNodeLost)
	g.Expect(lost.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(lost.Reason).To(Equal(dsv1alpha1.ReasonLeaseRenewed))
	g.Expect(MarkNodeLost(obj, "n1", time.Now())).To(BeTrue(), "a node lost again is marked again")
}
