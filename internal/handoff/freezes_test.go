package handoff

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// TestFreezesExcludeCapturesAndCommands: a Sandbox is held by one capture or one command at a time, the
// refusal names the holder, and only letting go of a hold wakes those waiting.
func TestFreezesExcludeCapturesAndCommands(t *testing.T) {
	g := NewWithT(t)
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u"}}
	other := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t", UID: "v"}}
	var woken []types.NamespacedName
	f := &Freezes{}
	f.Notify(func(key types.NamespacedName) { woken = append(woken, key) })

	_, _, ok := f.Hold(sbx, "snap")
	g.Expect(ok).To(BeTrue())
	g.Expect(f.Held(sbx.UID)).To(BeTrue())
	capturing, running, ok := f.StartRun(sbx, "e")
	g.Expect([]any{capturing, running, ok}).To(Equal([]any{"snap", "", false}), "no command while a capture holds it")
	capturing, _, ok = f.Hold(sbx, "snap2")
	g.Expect([]any{capturing, ok}).To(Equal([]any{"snap", false}), "one capture at a time")
	_, _, ok = f.StartRun(other, "e")
	g.Expect(ok).To(BeTrue(), "other Sandboxes are free")

	f.Release(sbx.UID)
	g.Expect(woken).To(Equal([]types.NamespacedName{{Namespace: "ns", Name: "s"}}))
	_, _, ok = f.StartRun(sbx, "e")
	g.Expect(ok).To(BeTrue())
	g.Expect(f.Held(sbx.UID)).To(BeFalse(), "Held is about captures only: the Sandbox reconciler still pauses a running command on request")
	capturing, running, ok = f.Hold(sbx, "snap")
	g.Expect([]any{capturing, running, ok}).To(Equal([]any{"", "e", false}), "no capture while a command runs")
	_, running, ok = f.StartRun(sbx, "e2")
	g.Expect([]any{running, ok}).To(Equal([]any{"e", false}), "one command at a time")

	f.EndRun(sbx.UID)
	f.EndRun(sbx.UID) // letting go of nothing wakes nobody
	g.Expect(woken).To(HaveLen(2))
	g.Expect((*Freezes)(nil).Held(sbx.UID)).To(BeFalse())
}
