package execution

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const testGrace = 9 * time.Second

// untakenWorld is one agent's view: its cache (Client) holds the Executions and this node's Sandboxes, the API
// server (APIReader) every Sandbox.
type untakenWorld struct {
	r      untakenReconciler
	cache  client.Client
	events *events.FakeRecorder
}

func newUntakenWorld(t *testing.T, cached []client.Object, elsewhere ...client.Object) *untakenWorld {
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cached...).WithStatusSubresource(&dsv1alpha1.Execution{}).Build()
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(elsewhere, cached...)...).Build()
	rec := events.NewFakeRecorder(10)
	return &untakenWorld{
		r: untakenReconciler{&Reconciler{
			Client: cache, APIReader: api, Recorder: rec,
			Options: Options{Node: "n1", SandboxGrace: testGrace},
		}},
		cache: cache, events: rec,
	}
}

func (w *untakenWorld) pass(t *testing.T, ex *dsv1alpha1.Execution) (ctrl.Result, *dsv1alpha1.Execution) {
	g := NewWithT(t)
	res, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ex)})
	g.Expect(err).NotTo(HaveOccurred())
	cur := &dsv1alpha1.Execution{}
	if err := w.cache.Get(context.Background(), client.ObjectKeyFromObject(ex), cur); err != nil {
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return res, nil
	}
	return res, cur
}

// untaken is an Execution in ns for sandbox, created age ago, that no agent has taken.
func untaken(sandbox string, age time.Duration, ttl int32) *dsv1alpha1.Execution {
	return &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", UID: "u1", CreationTimestamp: metav1.NewTime(time.Now().Add(-age))},
		Spec:       dsv1alpha1.ExecutionSpec{SandboxName: sandbox, TTLSecondsAfterFinished: ptr.To(ttl)},
	}
}

func sandboxNamed(name string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func TestUntakenFailsAfterTheGraceAndExpires(t *testing.T) {
	g := NewWithT(t)
	w := newUntakenWorld(t, []client.Object{untaken("absent", time.Hour, 0)})
	_, ex := w.pass(t, untaken("absent", 0, 0))
	g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionFailed))
	g.Expect(ex.Status.Reason).To(Equal(dsv1alpha1.ReasonSandboxNotFound))
	g.Expect(ex.Status.Message).To(Equal("Sandbox absent does not exist in namespace ns; the command did not run"))
	g.Expect(ex.Status.NodeName).To(BeEmpty(), "no agent took it, so any agent expires it")
	g.Expect(ex.Status.FinishTime).NotTo(BeNil(), "its TTL counts from now")
	g.Expect(w.events.Events).To(Receive(ContainSubstring("SandboxNotFound")))

	_, ex = w.pass(t, ex)
	g.Expect(ex).To(BeNil(), "ttlSecondsAfterFinished 0: deleted on the next pass")
}

func TestUntakenWaitsWithoutWriting(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ex        *dsv1alpha1.Execution
		cached    []client.Object
		elsewhere []client.Object
		min, max  time.Duration
	}{
		{name: "within the grace: the rest of it and this agent's stagger", ex: untaken("absent", 2*time.Second, 0),
			min: time.Nanosecond, max: testGrace + testGrace/3},
		{name: "Sandbox exists elsewhere (unbound, or its agent is slow): looked at again later", ex: untaken("present", time.Hour, 0),
			elsewhere: []client.Object{sandboxNamed("present")}, min: untakenRecheck, max: untakenRecheck},
		{name: "Sandbox on this node: the Execution reconciler's", ex: untaken("mine", time.Hour, 0),
			cached: []client.Object{sandboxNamed("mine")}},
		{name: "taken by a node", ex: func() *dsv1alpha1.Execution {
			ex := untaken("absent", time.Hour, 0)
			ex.Status.NodeName = "n2"
			return ex
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newUntakenWorld(t, append(tc.cached, tc.ex), tc.elsewhere...)
			res, ex := w.pass(t, tc.ex)
			g.Expect(res.RequeueAfter).To(BeNumerically(">=", tc.min))
			g.Expect(res.RequeueAfter).To(BeNumerically("<=", tc.max))
			g.Expect(ex.Status.Phase).To(BeEmpty())
			g.Expect(ex.ResourceVersion).To(Equal("999"), "nothing written")
		})
	}
}

func TestStagger(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Options: Options{Node: "n1"}}
	other := &Reconciler{Options: Options{Node: "n2"}}
	differ := 0
	for _, uid := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{UID: types.UID("uid-" + uid)}}
		g.Expect(r.stagger(ex)).To(BeNumerically("<=", DefaultSandboxGrace/3))
		g.Expect(r.stagger(ex)).To(Equal(r.stagger(ex)), "the same turn on every pass")
		if r.stagger(ex) != other.stagger(ex) {
			differ++
		}
	}
	g.Expect(differ).To(BeNumerically(">", 0), "agents take their turns in different orders")
}
