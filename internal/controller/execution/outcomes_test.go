package execution

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
)

var executions = schema.GroupResource{Group: "dockside.dev", Resource: "executions"}

// outcomeWorld is an agent whose run of Execution e in Sandbox s has ended, before an API server that
// refuses the next refuse status writes, each with the next of faults in turn.
type outcomeWorld struct {
	r       *Reconciler
	docker  *fake.Driver
	events  *events.FakeRecorder
	poisons []types.NamespacedName // verdicts handed to the Sandbox reconciler
	refuse  int
	faults  []error
	refused int
	reads   int // Gets of the Execution
}

func newOutcomeWorld(t *testing.T, edits ...func(*dsv1alpha1.Execution)) (*outcomeWorld, *dsv1alpha1.Execution) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "sbx-1"},
		Spec:       dsv1alpha1.SandboxSpec{Image: "dockside.dev/busybox:local", NodeName: "n1"},
	}
	now := metav1.NowMicro()
	ex := &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", UID: "ex-1", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: "s", UID: sbx.UID,
		}}},
		Spec: dsv1alpha1.ExecutionSpec{SandboxName: "s", Command: []string{"echo", "hello"}},
		Status: dsv1alpha1.ExecutionStatus{
			Phase: dsv1alpha1.ExecutionRunning, NodeName: "n1", StartTime: &now, TopologyGeneration: 1,
		},
	}
	for _, edit := range edits {
		edit(ex)
	}
	w := &outcomeWorld{docker: fake.New("n1"), events: events.NewFakeRecorder(10), faults: []error{
		apierrors.NewServiceUnavailable("etcd is unwell"),
		apierrors.NewTooManyRequests("slow down", 0),
		apierrors.NewServerTimeout(executions, "patch", 0),
	}}
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(sbx, ex).
		WithStatusSubresource(&dsv1alpha1.Execution{}, &dsv1alpha1.Sandbox{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*dsv1alpha1.Execution); ok {
					w.reads++
				}
				return c.Get(ctx, key, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if w.refused < w.refuse {
					w.refused++
					return w.faults[(w.refused-1)%len(w.faults)]
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	w.r = &Reconciler{
		Client: api, APIReader: api, Driver: w.docker, Recorder: w.events, Runs: NewRuns(),
		Verdicts: handoff.NewVerdicts(func(key types.NamespacedName) { w.poisons = append(w.poisons, key) }),
		Options:  Options{Node: "n1", MaxOutputBytes: 65536},
	}
	return w, ex
}

func (w *outcomeWorld) pass(ex *dsv1alpha1.Execution) error {
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ex)})
	return err
}

func (w *outcomeWorld) get(t *testing.T, ex *dsv1alpha1.Execution) *dsv1alpha1.Execution {
	cur := &dsv1alpha1.Execution{}
	NewWithT(t).Expect(w.r.Get(context.Background(), client.ObjectKeyFromObject(ex), cur)).To(Succeed())
	return cur
}

// helloOutcome is the outcome of a command that printed hello and exited 0.
func helloOutcome(ex *dsv1alpha1.Execution) outcome {
	res := dd.ExecResult{Reason: dd.ExecCompleted, Stdout: []byte("hello\n")}
	return newOutcome(judge(ex, res, nil, false), res)
}

func expectHello(g Gomega, got *dsv1alpha1.Execution) {
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))
	g.Expect(got.Status.Reason).To(Equal(dsv1alpha1.ReasonCompleted))
	g.Expect(got.Status.Stdout).To(Equal("hello\n"))
	g.Expect(got.Status.ExitCode).To(HaveValue(BeZero()))
	g.Expect(got.Status.SandboxKilled).To(BeFalse())
	g.Expect(got.Status.FinishTime).NotTo(BeNil())
}

func TestRecordOutlastsTransientErrors(t *testing.T) {
	g := NewWithT(t)
	w, ex := newOutcomeWorld(t)
	w.refuse = 2 // 503, then 429: within the run's own retries

	g.Expect(w.r.record(context.Background(), ex, helloOutcome(ex))).To(Succeed())
	g.Expect(w.refused).To(Equal(2))
	expectHello(g, w.get(t, ex))
	g.Expect(recorder.Drain(w.events)).To(Equal([]string{"Normal " + EventExecutionSucceeded}))
}

// TestRunWritesWithoutReading: a run writes its exec and its outcome onto the Execution as it last wrote it,
// with no read before each write, and reads it afresh only when something else wrote it since.
func TestRunWritesWithoutReading(t *testing.T) {
	g := NewWithT(t)
	w, ex := newOutcomeWorld(t)
	launched := w.get(t, ex) // as its Running write left it
	ctx := context.Background()

	reads := w.reads
	g.Expect(w.r.noteExec(ctx, launched, dd.ExecRef{ID: "exec-1", Before: []string{"1"}})).To(Succeed())
	g.Expect(w.reads).To(Equal(reads), "no read before the exec's write")
	stored := w.get(t, ex)
	g.Expect(stored.Status.Exec).To(HaveValue(HaveField("ID", "exec-1")))
	g.Expect(launched.ResourceVersion).To(Equal(stored.ResourceVersion), "launched is the Execution as written")

	reads = w.reads
	g.Expect(w.r.record(ctx, launched, helloOutcome(ex))).To(Succeed())
	g.Expect(w.reads).To(Equal(reads), "no read before the outcome's write")
	expectHello(g, w.get(t, ex))
	g.Expect(recorder.Drain(w.events)).To(Equal([]string{"Normal " + EventExecutionSucceeded}))

	w2, ex2 := newOutcomeWorld(t)
	stale := w2.get(t, ex2)
	other := stale.DeepCopy()
	other.Labels = map[string]string{"someone": "else"}
	g.Expect(w2.r.Update(ctx, other)).To(Succeed()) // written by another since: stale's version is behind
	reads = w2.reads
	g.Expect(w2.r.record(ctx, stale, helloOutcome(ex2))).To(Succeed())
	g.Expect(w2.reads).To(Equal(reads+1), "read afresh after the conflict")
	got := w2.get(t, ex2)
	expectHello(g, got)
	g.Expect(got.Labels).To(HaveKeyWithValue("someone", "else"))
}

// TestKeptOutcomeIsWrittenOnceTheAPIRecovers: a run whose outcome could not be written keeps it, and the
// passes after it write that outcome, however long the API server takes to answer again, instead of
// ending the Execution as Lost: the container is not stopped and the Sandbox not poisoned.
func TestKeptOutcomeIsWrittenOnceTheAPIRecovers(t *testing.T) {
	g := NewWithT(t)
	w, ex := newOutcomeWorld(t)
	w.refuse = 1 << 30
	o := helloOutcome(ex)

	err := w.r.record(context.Background(), ex, o)
	g.Expect(apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err)).To(BeTrue(), "%v", err)
	g.Expect(w.refused).To(Equal(4), "one write and three retries")
	w.r.Runs.keep(client.ObjectKeyFromObject(ex), ex.UID, o) // as the run does when record fails

	err = w.pass(ex)
	g.Expect(err).To(HaveOccurred(), "returned, so that the controller backs off and runs the pass again")
	g.Expect(w.get(t, ex).Status.Phase).To(Equal(dsv1alpha1.ExecutionRunning))
	_, kept := w.r.Runs.kept(ex.UID)
	g.Expect(kept).To(BeTrue(), "the outcome stays kept while it is not written")

	w.refuse = w.refused + 1 // one more refusal, then the API server answers
	g.Expect(w.pass(ex)).To(Succeed())
	expectHello(g, w.get(t, ex))
	g.Expect(recorder.Drain(w.events)).To(Equal([]string{"Normal " + EventExecutionSucceeded}))
	g.Expect(w.docker.Calls(fake.OpStopContainer)).To(BeZero(), "the container is not stopped")
	g.Expect(w.poisons).To(BeEmpty(), "the Sandbox is not poisoned")

	g.Expect(w.pass(ex)).To(Succeed()) // the pass that finds it finished
	_, kept = w.r.Runs.kept(ex.UID)
	g.Expect(kept).To(BeFalse(), "dropped once written")
}

// TestLostRunWithoutKeptOutcome: an Execution Running with no run and no outcome here, whose command ran
// attached to an agent gone since, is Lost and its container stopped.
func TestLostRunWithoutKeptOutcome(t *testing.T) {
	g := NewWithT(t)
	w, ex := newOutcomeWorld(t, func(ex *dsv1alpha1.Execution) { ex.Status.Exec = &dsv1alpha1.ExecutionExec{} })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the verdict's wait ends at once: this case checks only that the lost path is taken
	_, err := w.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ex)})
	g.Expect(err).To(HaveOccurred())
	g.Expect(w.docker.Calls(fake.OpStopContainer)).To(Equal(1), "the container of a lost run is stopped")
}

// TestNothingRanWithoutExec: an Execution Running with no exec recorded never started its command: it is Lost
// and nothing of its Sandbox is touched.
func TestNothingRanWithoutExec(t *testing.T) {
	g := NewWithT(t)
	w, ex := newOutcomeWorld(t)
	g.Expect(w.pass(ex)).To(Succeed())
	got := w.get(t, ex)
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.ExecutionFailed))
	g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("nothing ran"))))
	g.Expect(got.Status.SandboxKilled).To(BeFalse())
	g.Expect(w.docker.Calls(fake.OpStopContainer)).To(BeZero(), "the container is not stopped")
	g.Expect(w.poisons).To(BeEmpty(), "the Sandbox is not poisoned")
}

func TestCancelDropsKeptOutcomes(t *testing.T) {
	g := NewWithT(t)
	runs := NewRuns()
	key := types.NamespacedName{Namespace: "ns", Name: "e"}
	kept := func(uid types.UID) bool { _, ok := runs.kept(uid); return ok }

	runs.keep(key, "old", outcome{})
	runs.keep(types.NamespacedName{Namespace: "ns", Name: "other"}, "other", outcome{})
	runs.cancel(key, "new") // replaced by an Execution of the same name
	g.Expect(kept("old")).To(BeFalse())
	g.Expect(kept("other")).To(BeTrue())

	runs.keep(key, "new", outcome{})
	runs.cancel(key, "new")
	g.Expect(kept("new")).To(BeTrue(), "the Execution's own outcome stays")
	runs.cancel(key, "") // deleted
	g.Expect(kept("new")).To(BeFalse())
}
