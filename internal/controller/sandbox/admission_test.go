package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// unbound is a Sandbox bound to no node yet: no finalizer, no status.
func unbound(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	sbx.Spec.NodeName = ""
	sbx.Finalizers = nil
	return sbx
}

// TestAdmission runs one pass over a Sandbox waiting to be bound or admitted beside what the node holds, and
// checks that it is taken, or left waiting with a status that says which room it lacks. Every default
// Sandbox holds 1036 MiB: 512Mi primary, 512Mi workspace, the holder's 8Mi and the run volume's 4Mi.
func TestAdmission(t *testing.T) {
	const gi = int64(1 << 30)
	withMemory := func(q string) func(*dsv1alpha1.Sandbox) {
		return func(s *dsv1alpha1.Sandbox) { s.Spec.Resources.Memory = resource.MustParse(q) }
	}
	pending := bound(newSandbox("pending")) // bound by its author, not yet admitted: not counted when admitting
	for _, tc := range []struct {
		name        string
		sbx         *dsv1alpha1.Sandbox
		held        []client.Object
		recent      int64 // footprint of an admission made a moment ago that the cache does not show; 0: none
		capacity    int
		allocatable int64
		reason      string // Ready's reason when it has to wait; "" when taken
		says        string // in the message of Ready (and Scheduled)
	}{
		{name: "admitted where it fits", sbx: bound(newSandbox("new")), held: []client.Object{newSandbox("a")},
			capacity: 3, allocatable: 3 * gi},
		{name: "waits when the count is full", sbx: bound(newSandbox("new")), held: []client.Object{newSandbox("a"), newSandbox("b")},
			capacity: 2, allocatable: 64 * gi, reason: dsv1alpha1.ReasonNodeFull, says: "node node-a holds 2 Sandboxes, its capacity"},
		{name: "waits when memory is short", sbx: bound(newSandbox("new")), held: []client.Object{newSandbox("a"), newSandbox("b")},
			capacity: 10, allocatable: 3 * gi, reason: dsv1alpha1.ReasonInsufficientMemory,
			says: "node node-a has room for 1000 MiB of memory, this Sandbox needs 1.0 GiB"},
		{name: "a Sandbox waiting for admission holds nothing", sbx: bound(newSandbox("new")), held: []client.Object{newSandbox("a"), pending},
			capacity: 2, allocatable: 3 * gi},
		{name: "a finished run counts only its workspace and holder", sbx: bound(newSandbox("new")),
			held: []client.Object{newSandbox("a"), finished(newSandbox("done", run()))}, capacity: 10, allocatable: 3 * gi},
		{name: "a poisoned session likewise", sbx: bound(newSandbox("new")),
			held:     []client.Object{newSandbox("a"), withCondition(newSandbox("poisoned", withMemory("1Gi")), dsv1alpha1.ConditionTopologyPoisoned, true, dsv1alpha1.ReasonDeadlineExceeded, "x")},
			capacity: 10, allocatable: 3 * gi},
		{name: "an admission the cache does not show yet counts", sbx: bound(newSandbox("new")), held: []client.Object{newSandbox("a")},
			recent: gi, capacity: 10, allocatable: 3 * gi, reason: dsv1alpha1.ReasonInsufficientMemory, says: "has room for 1012 MiB"},
		{name: "a Sandbox bigger than the node waits, and says it", sbx: bound(newSandbox("new", withMemory("4Gi"))),
			capacity: 10, allocatable: 3 * gi, reason: dsv1alpha1.ReasonInsufficientMemory, says: "more than node node-a can ever give"},
		{name: "bound where it fits", sbx: unbound(newSandbox("new")), held: []client.Object{newSandbox("a")},
			capacity: 3, allocatable: 3 * gi},
		{name: "binding counts Sandboxes bound but not admitted", sbx: unbound(newSandbox("new")), held: []client.Object{newSandbox("a"), pending},
			capacity: 10, allocatable: 3 * gi, reason: dsv1alpha1.ReasonNoCapacity, says: "waiting for an agent with room for one more Sandbox"},
		{name: "left unbound when the count is full", sbx: unbound(newSandbox("new")), held: []client.Object{newSandbox("a")},
			capacity: 1, allocatable: 64 * gi, reason: dsv1alpha1.ReasonNoCapacity, says: "waiting for an agent with room for one more Sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness(t, append(tc.held, tc.sbx)...)
			h.r.Options.Capacity, h.r.Options.Allocatable = tc.capacity, Holding{Memory: tc.allocatable}
			if tc.recent != 0 {
				h.r.remember(types.UID("uid-just-admitted"), Holding{Memory: tc.recent})
			}
			res, err := h.pass(tc.sbx)
			g.Expect(err).NotTo(HaveOccurred())
			got := h.get(tc.sbx)
			if tc.reason == "" {
				g.Expect(got.Spec.NodeName).To(Equal(testNode))
				if tc.sbx.Spec.NodeName != "" {
					g.Expect(controllerutil.ContainsFinalizer(got, dsv1alpha1.FinalizerCleanup)).To(BeTrue(), "admitted")
				}
				return
			}
			g.Expect(res.RequeueAfter).To(Equal(bindRetry), "looks again for room")
			g.Expect(got.Spec.NodeName).To(Equal(tc.sbx.Spec.NodeName), "not bound")
			g.Expect(got.Finalizers).To(BeEmpty(), "not admitted")
			g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxPending))
			ready := condition(got, dsv1alpha1.ConditionReady)
			g.Expect(ready.Reason).To(Equal(tc.reason))
			g.Expect(ready.Message).To(ContainSubstring(tc.says))
			scheduled := condition(got, dsv1alpha1.ConditionScheduled)
			if tc.sbx.Spec.NodeName == "" {
				g.Expect(scheduled.Reason).To(Equal(dsv1alpha1.ReasonNoCapacity))
				g.Expect(scheduled.Message).To(Equal("waiting for an agent with room for one more Sandbox and 1.0 GiB of memory"),
					"the Sandbox's own needs, in words every agent without room would write")
			} else {
				g.Expect(scheduled.Reason).To(Equal(tc.reason))
				g.Expect(scheduled.Message).To(Equal(ready.Message))
			}
			g.Expect(h.owned(got.UID)).To(BeZero(), "nothing made in Docker")
		})
	}
}

// TestAdmissionAfterRunFinished: a Sandbox waiting for memory is admitted once a run the node holds finishes,
// as the run then counts only its workspace and holder.
func TestAdmissionAfterRunFinished(t *testing.T) {
	g := NewWithT(t)
	job := newSandbox("job", run())
	waiting := bound(newSandbox("waiting"))
	h := newHarness(t, newSandbox("a"), job, waiting)
	h.r.Options.Allocatable.Memory = 3 << 30

	_, err := h.pass(waiting)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(condition(h.get(waiting), dsv1alpha1.ConditionReady).Reason).To(Equal(dsv1alpha1.ReasonInsufficientMemory))

	done := finished(h.get(job))
	g.Expect(h.client.Status().Update(h.ctx, done)).To(Succeed())
	_, err = h.pass(waiting)
	g.Expect(err).NotTo(HaveOccurred())
	got := h.get(waiting)
	g.Expect(controllerutil.ContainsFinalizer(got, dsv1alpha1.FinalizerCleanup)).To(BeTrue(), "admitted")
	g.Expect(condition(got, dsv1alpha1.ConditionReady).Reason).NotTo(Equal(dsv1alpha1.ReasonInsufficientMemory))
}

// TestAdmissionUnderWayHoldsRoom: an admission (as a bind) holds its room from its count on, while its write
// is under way outside the admission lock, so that a pass admitting another Sandbox meanwhile neither waits
// for that write nor overfills the node; a write that fails gives the room back.
func TestAdmissionUnderWayHoldsRoom(t *testing.T) {
	g := NewWithT(t)
	first, second := bound(newSandbox("first")), bound(newSandbox("second"))
	h := newHarness(t, first, second)
	h.r.Options.Capacity = 1
	writing, release := make(chan struct{}), make(chan struct{})
	h.apiFault = func(op string, obj client.Object) error {
		if op != "patch" || obj.GetName() != first.Name {
			return nil
		}
		close(writing)
		<-release
		return apierrors.NewConflict(dsv1alpha1.GroupVersion.WithResource("sandboxes").GroupResource(), first.Name, nil)
	}
	admitted := make(chan error, 1)
	go func() {
		_, err := h.pass(first)
		admitted <- err
	}()
	select {
	case <-writing:
	case err := <-admitted:
		t.Fatalf("the first pass wrote no admission: %v", err)
	}

	passed := make(chan error, 1)
	go func() {
		_, err := h.pass(second)
		passed <- err
	}()
	select {
	case err := <-passed:
		g.Expect(err).NotTo(HaveOccurred())
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("an admission waited for another admission's API write")
	}
	g.Expect(h.get(second).Finalizers).To(BeEmpty(), "no room beside the admission under way")
	g.Expect(condition(h.get(second), dsv1alpha1.ConditionScheduled).Reason).To(Equal(dsv1alpha1.ReasonNodeFull))

	close(release)
	g.Expect(<-admitted).NotTo(HaveOccurred(), "a conflict is looked at again, not an error")
	g.Expect(h.get(first).Finalizers).To(BeEmpty())
	_, err := h.pass(second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(controllerutil.ContainsFinalizer(h.get(second), dsv1alpha1.FinalizerCleanup)).To(BeTrue(), "the failed admission gave its room back")
}
