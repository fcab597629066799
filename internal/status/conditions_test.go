package status

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// at is an object at metadata generation gen.
func at(gen int64) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", Generation: gen}}
}

func TestSet(t *testing.T) {
	g := NewWithT(t)
	obj := at(3)
	Set(obj, "Thing", true, "Because", "it is so")
	c := meta.FindStatusCondition(obj.Status.Conditions, "Thing")
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(c.Reason).To(Equal("Because"))
	g.Expect(c.Message).To(Equal("it is so"))
	g.Expect(c.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(IsTrue(obj, "Thing")).To(BeTrue())

	obj.Generation = 4
	Set(obj, "Thing", false, "Otherwise", "no more")
	c = meta.FindStatusCondition(obj.Status.Conditions, "Thing")
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.ObservedGeneration).To(Equal(int64(4)))
	g.Expect(IsTrue(obj, "Thing")).To(BeFalse())
	g.Expect(IsTrue(obj, "Absent")).To(BeFalse())
	g.Expect(obj.Status.Conditions).To(HaveLen(1))
}

func TestSetDefault(t *testing.T) {
	g := NewWithT(t)
	obj := at(1)
	SetDefault(obj, "Paused", "Running", "not paused")
	c := meta.FindStatusCondition(obj.Status.Conditions, "Paused")
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "an absent condition is set False")
	g.Expect(c.Reason).To(Equal("Running"))
	g.Expect(c.ObservedGeneration).To(Equal(int64(1)))

	Set(obj, "Paused", true, "Paused", "frozen")
	obj.Generation = 2
	SetDefault(obj, "Paused", "Running", "not paused")
	c = meta.FindStatusCondition(obj.Status.Conditions, "Paused")
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "the step that set it owns it")
	g.Expect(c.Reason).To(Equal("Paused"))
	g.Expect(c.Message).To(Equal("frozen"))
	g.Expect(c.ObservedGeneration).To(Equal(int64(2)), "only marked observed at the current generation")
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		s                             Summary
		ready, reconciling, stalledOn bool
	}{
		{name: "ready", s: Summary{Ready: true, Reason: "Running", Message: "up"}, ready: true},
		{name: "stalled", s: Summary{Stalled: true, Reason: "ImageNotPinned", Message: "refused"}, stalledOn: true},
		{name: "neither: still reconciling", s: Summary{Reason: "Creating", Message: "building"}, reconciling: true},
		{name: "both ready and stalled: not reconciling", s: Summary{Ready: true, Stalled: true, Reason: "X", Message: "x"}, ready: true, stalledOn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := at(7)
			Set(obj, dsv1alpha1.ConditionReconciling, !tc.reconciling, "Before", "an earlier pass")
			Summarize(obj, tc.s)
			for typ, on := range map[string]bool{
				dsv1alpha1.ConditionReady: tc.ready, dsv1alpha1.ConditionReconciling: tc.reconciling, dsv1alpha1.ConditionStalled: tc.stalledOn,
			} {
				c := meta.FindStatusCondition(obj.Status.Conditions, typ)
				g.Expect(c).NotTo(BeNil(), typ)
				g.Expect(c.Status == metav1.ConditionTrue).To(Equal(on), typ)
				g.Expect(c.Reason).To(Equal(tc.s.Reason), typ+": one reason for all three")
				g.Expect(c.Message).To(Equal(tc.s.Message), typ)
				g.Expect(c.ObservedGeneration).To(Equal(int64(7)), typ)
			}
			g.Expect(obj.Status.Conditions).To(HaveLen(3))
		})
	}
}
