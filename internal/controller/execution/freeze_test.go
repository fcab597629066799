package execution

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	fakedocker "github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/topology"
)

// freezeWorld is one agent with a Ready session "s" whose primary runs in a fake Docker, and one Execution
// "e" queued for it. The cache and the API server are one fake client.
type freezeWorld struct {
	r      *Reconciler
	api    client.Client
	docker *fakedocker.Driver
	sbx    *dsv1alpha1.Sandbox
	ex     *dsv1alpha1.Execution
	freed  chan types.NamespacedName
}

func newFreezeWorld(t *testing.T, tweak func(*dsv1alpha1.Sandbox)) *freezeWorld {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "sbx-uid", Generation: 1},
		Spec:       dsv1alpha1.SandboxSpec{Image: "img", NodeName: "n1"},
		Status: dsv1alpha1.SandboxStatus{
			ObservedGeneration: 1, Phase: dsv1alpha1.SandboxRunning, TopologyGeneration: 1,
			Conditions: []metav1.Condition{{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Running", LastTransitionTime: metav1.Now()}},
		},
	}
	if tweak != nil {
		tweak(sbx)
	}
	ex := &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", UID: "ex-uid", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: "s", UID: sbx.UID, Controller: ptr.To(true),
		}}},
		Spec: dsv1alpha1.ExecutionSpec{SandboxName: "s", Command: []string{"echo", "hi"}, TimeoutSeconds: 5},
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sbx, ex).
		WithStatusSubresource(&dsv1alpha1.Execution{}, &dsv1alpha1.Sandbox{}).
		WithIndex(&dsv1alpha1.Execution{}, dsv1alpha1.FieldExecutionSandboxName, func(o client.Object) []string {
			return []string{o.(*dsv1alpha1.Execution).Spec.SandboxName}
		}).Build()

	docker := fakedocker.New("n1")
	docker.AddImage("img", dd.ImageInfo{})
	names := topology.NamesOf(sbx)
	ctx := context.Background()
	_, err := docker.EnsureContainer(ctx, dd.ContainerSpec{Name: names.Primary(), Owner: names.Owner(), Role: dsv1alpha1.RolePrimary, Image: "img",
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docker.StartContainer(ctx, names.Primary())).To(Succeed())
	docker.SetExecHandler(func(context.Context, string, dd.ExecRequest) fakedocker.ExecOutput {
		return fakedocker.ExecOutput{Stdout: []byte("hi\n")}
	})

	base, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w := &freezeWorld{api: api, docker: docker, sbx: sbx, ex: ex, freed: make(chan types.NamespacedName, 8)}
	w.r = &Reconciler{
		Client: api, APIReader: api, Driver: docker, Recorder: events.NewFakeRecorder(10),
		Runs: NewRuns(), Freezes: &handoff.Freezes{}, Verdicts: handoff.NewVerdicts(func(types.NamespacedName) {}),
		Options: Options{Node: "n1", MaxOutputBytes: 1024},
		base:    base, ended: make(chan event.GenericEvent, 8),
	}
	w.r.Freezes.Notify(func(key types.NamespacedName) { w.freed <- key })
	return w
}

// pass runs one Reconcile of the Execution and returns it as stored afterwards.
func (w *freezeWorld) pass(g Gomega) *dsv1alpha1.Execution {
	_, err := w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.ex)})
	g.Expect(err).NotTo(HaveOccurred())
	return w.get(g)
}

func (w *freezeWorld) get(g Gomega) *dsv1alpha1.Execution {
	cur := &dsv1alpha1.Execution{}
	g.Expect(w.api.Get(context.Background(), client.ObjectKeyFromObject(w.ex), cur)).To(Succeed())
	return cur
}

// settled waits for the run to end and write its outcome.
func (w *freezeWorld) settled(g Gomega) *dsv1alpha1.Execution {
	g.Eventually(w.r.ended).Should(Receive())
	return w.get(g)
}

func TestExecutionWaitsWhileACaptureHoldsItsSandbox(t *testing.T) {
	g := NewWithT(t)
	w := newFreezeWorld(t, nil)
	_, _, ok := w.r.Freezes.Hold(w.sbx, "snap")
	g.Expect(ok).To(BeTrue())

	ex := w.pass(g)
	g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionQueued))
	g.Expect(ex.Status.Reason).To(Equal(dsv1alpha1.ReasonSandboxFrozen))
	g.Expect(ex.Status.Message).To(Equal("waiting while Checkpoint snap captures the workspace of Sandbox s"))
	g.Expect(w.docker.Calls(fakedocker.OpExec)).To(BeZero(), "nothing ran")
	g.Expect(w.r.Freezes.Held(w.sbx.UID)).To(BeTrue(), "the capture keeps its hold")

	w.r.Freezes.Release(w.sbx.UID)
	g.Expect(w.freed).To(Receive(Equal(types.NamespacedName{Namespace: "ns", Name: "s"})), "the thaw wakes the queue")

	w.pass(g)
	ex = w.settled(g)
	g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))
	g.Expect(ex.Status.Stdout).To(Equal("hi\n"))
}

func TestACaptureWaitsWhileACommandRuns(t *testing.T) {
	g := NewWithT(t)
	w := newFreezeWorld(t, nil)
	release := make(chan struct{})
	w.docker.SetExecHandler(func(ctx context.Context, _ string, _ dd.ExecRequest) fakedocker.ExecOutput {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fakedocker.ExecOutput{Stdout: []byte("done\n")}
	})

	g.Expect(w.pass(g).Status.Phase).To(Equal(dsv1alpha1.ExecutionRunning))
	capturing, running, ok := w.r.Freezes.Hold(w.sbx, "snap")
	g.Expect(ok).To(BeFalse(), "no capture while the command runs")
	g.Expect(capturing).To(BeEmpty())
	g.Expect(running).To(Equal("e"))

	close(release)
	g.Expect(w.settled(g).Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))
	g.Eventually(w.freed).Should(Receive(), "the command's end wakes the capture waiting")
	_, _, ok = w.r.Freezes.Hold(w.sbx, "snap")
	g.Expect(ok).To(BeTrue())
}

func TestFailedRunningWriteGivesTheSandboxBack(t *testing.T) {
	g := NewWithT(t)
	w := newFreezeWorld(t, nil)
	// Another writer moved the Execution on after the pass read it: the pass's write conflicts.
	stale := w.get(g)
	fresh := stale.DeepCopy()
	fresh.Labels = map[string]string{"touched": "yes"}
	g.Expect(w.api.Update(context.Background(), fresh)).To(Succeed())
	cache := &staleReader{Client: w.api, ex: stale}
	w.r.Client = cache

	_, _ = w.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w.ex)})
	g.Expect(w.get(g).Status.Phase).NotTo(Equal(dsv1alpha1.ExecutionRunning))
	g.Expect(w.docker.Calls(fakedocker.OpExec)).To(BeZero())
	g.Expect(w.freed).To(Receive(), "the pass took the Sandbox, and gave it back")
	_, _, ok := w.r.Freezes.Hold(w.sbx, "snap")
	g.Expect(ok).To(BeTrue(), "a command that did not start holds nothing")
}

// staleReader is a cache that still serves an older version of the Execution.
type staleReader struct {
	client.Client
	ex *dsv1alpha1.Execution
}

func (s *staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if ex, ok := obj.(*dsv1alpha1.Execution); ok && key == client.ObjectKeyFromObject(s.ex) {
		s.ex.DeepCopyInto(ex)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

func TestExecutionWaitsWhileItsSandboxIsPaused(t *testing.T) {
	pausedStatus := func(sbx *dsv1alpha1.Sandbox) {
		sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
		sbx.Status.Phase = dsv1alpha1.SandboxPaused
		sbx.Status.Conditions = append(sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionPaused, Status: metav1.ConditionTrue, Reason: "Paused", LastTransitionTime: metav1.Now()})
	}
	for _, tc := range []struct {
		name  string
		tweak func(*dsv1alpha1.Sandbox)
	}{
		{name: "paused", tweak: pausedStatus},
		{name: "pausing: spec.lifecycle Paused not acted on yet", tweak: func(sbx *dsv1alpha1.Sandbox) {
			sbx.Spec.Lifecycle, sbx.Generation = dsv1alpha1.LifecyclePaused, 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := newFreezeWorld(t, tc.tweak)
			ex := w.pass(g)
			g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionQueued))
			g.Expect(ex.Status.Reason).To(Equal(dsv1alpha1.ReasonSandboxPaused))
			g.Expect(ex.Status.Message).To(Equal("waiting for Sandbox s to be resumed (spec.lifecycle: Running)"))
			g.Expect(w.docker.Calls(fakedocker.OpExec)).To(BeZero())
		})
	}

	t.Run("a poisoned paused Sandbox refuses", func(t *testing.T) {
		g := NewWithT(t)
		w := newFreezeWorld(t, func(sbx *dsv1alpha1.Sandbox) {
			pausedStatus(sbx)
			sbx.Status.Conditions = append(sbx.Status.Conditions, metav1.Condition{Type: dsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "PrimaryExited", Message: "gone", LastTransitionTime: metav1.Now()})
		})
		ex := w.pass(g)
		g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionFailed))
		g.Expect(ex.Status.Reason).To(Equal(dsv1alpha1.ReasonSandboxNotReady))
	})
}

// A pause that lands between the decision to run and Docker's exec: Docker refuses, nothing ran, and the
// Execution is Queued again instead of Failed; it runs once the Sandbox is running again.
func TestARunDockerRefusesForAPauseIsQueuedAgain(t *testing.T) {
	g := NewWithT(t)
	w := newFreezeWorld(t, nil)
	primary := topology.NamesOf(w.sbx).Primary()
	w.docker.SetExecHandler(nil)
	g.Expect(w.docker.PauseContainer(context.Background(), primary)).To(Succeed())
	// The pass reads the Sandbox Ready (its status has not caught up with the pause) and launches the run.
	w.pass(g)
	ex := w.settled(g)
	g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionQueued))
	g.Expect(ex.Status.Reason).To(Equal(dsv1alpha1.ReasonSandboxPaused))
	g.Expect(ex.Status.Message).To(ContainSubstring("did not run"))
	g.Expect(ex.Status.StartTime).To(BeNil())
	g.Expect(ex.Status.FinishTime).To(BeNil())

	g.Expect(w.docker.UnpauseContainer(context.Background(), primary)).To(Succeed())
	w.docker.SetExecHandler(func(context.Context, string, dd.ExecRequest) fakedocker.ExecOutput {
		return fakedocker.ExecOutput{Stdout: []byte("hi\n")}
	})
	w.pass(g)
	ex = w.settled(g)
	g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))
	g.Expect(ex.Status.Stdout).To(Equal("hi\n"))
}

// A command Docker refused for a container that is not running (stopped) is not retried: it fails.
func TestARunRefusedByAStoppedContainerFails(t *testing.T) {
	g := NewWithT(t)
	w := newFreezeWorld(t, nil)
	g.Expect(w.docker.Exit(topology.NamesOf(w.sbx).Primary(), 1)).To(Succeed())
	w.pass(g)
	ex := w.settled(g)
	g.Expect(ex.Status.Phase).To(Equal(dsv1alpha1.ExecutionFailed))
	g.Expect(ex.Status.Reason).To(Equal(dsv1alpha1.ReasonSandboxNotReady))
}
