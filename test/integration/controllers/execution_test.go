//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("An Execution", func() {
	var (
		ns   string
		a    *testAgent
		jobs *jobLog
		sbx  *dsv1alpha1.Sandbox
	)
	// start runs an agent (tweaked), a Ready session "shell" on it, and the job handler on its daemon.
	start := func(tweak ...func(*agent.Options)) {
		ns, a, jobs = newNamespace(), newAgent(tweak...), newJobLog()
		a.docker.SetExecHandler(jobs.handle)
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.DeleteAllOf(ctx, &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})
		sbx = sandbox(ns, "shell", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	}

	It("runs its command with stdin, env and workingDir, and records exit code, output and times; its Sandbox owns it", func() {
		start()
		ex := execution(ns, "hello", "shell", "echo")
		ex.Spec.Stdin = "print(6*7)\n"
		ex.Spec.Env = []dsv1alpha1.ExecutionEnvVar{{Name: "GREETING", Value: "hi"}}
		ex.Spec.WorkingDir = "/workspace/src"
		create(ex)

		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		cur := getExec(ex)
		Expect(*cur.Status.ExitCode).To(BeEquivalentTo(0))
		Expect(cur.Status.Stdout).To(Equal("stdin=print(6*7)\n env=[GREETING=<redacted>] wd=/workspace/src"))
		Expect(cur.Status.Stderr).To(Equal("a warning\n"))
		Expect(cur.Status.StdoutTruncatedBytes + cur.Status.StderrTruncatedBytes).To(BeZero())
		Expect(cur.Status.SandboxKilled).To(BeFalse())
		Expect(cur.Status.NodeName).To(Equal(a.node))
		Expect(cur.Status.TopologyGeneration).To(BeEquivalentTo(1))
		Expect(cur.Status.StartTime).NotTo(BeNil())
		Expect(cur.Status.FinishTime.Time).NotTo(BeTemporally("<", cur.Status.StartTime.Time))
		Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, dsv1alpha1.ConditionReady)).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, dsv1alpha1.ConditionReconciling)).To(BeFalse())

		owner := metav1.GetControllerOf(cur)
		Expect(owner).NotTo(BeNil(), "a cluster's garbage collector deletes it with its Sandbox")
		Expect(owner.Kind).To(Equal("Sandbox"))
		Expect(owner.UID).To(Equal(get(sbx).UID))

		req := jobs.request("hello")
		Expect(req.Timeout).To(Equal(time.Minute), "timeoutSeconds defaults to 60")
		Expect(req.OutputLimit).To(Equal(65536), "maxOutputBytes defaults to 64 KiB")
		Expect(req.KillSurvivors).To(BeTrue(), "nothing the command starts may outlive it")
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"), "a command that ended on its own leaves the Sandbox as it was")
		Eventually(execEventReasons(ex)).Should(ContainElement("ExecutionSucceeded"))
	})

	It("runs one at a time per Sandbox, in creation order, not name order", func() {
		start()
		names := []string{"d", "c", "b", "a"}
		for _, name := range names {
			create(execution(ns, name, "shell", "brief"))
		}
		for _, name := range names {
			Eventually(execState(execution(ns, name, "shell", ""))).Should(Equal("Succeeded/Completed"))
		}
		Expect(jobs.started()).To(Equal(names))
		Expect(jobs.mostAtOnce()).To(Equal(1))
	})

	It("never runs a queued Execution deleted before its turn, and cancels a running one when deleted", func() {
		start()
		first, second := execution(ns, "first", "shell", "block"), execution(ns, "second", "shell", "brief")
		create(first)
		Eventually(execState(first)).Should(Equal("Running/Running"))
		create(second)
		Eventually(execState(second)).Should(Equal("Queued/Queued"))
		Expect(getExec(second).Status.Message).To(ContainSubstring("waiting for Execution first"))

		Expect(k8s.Delete(ctx(), second)).To(Succeed())
		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).Should(Equal(dd.StateExited), "cancel kills the container from the host")
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/Canceled"))
		Eventually(condition(sbx, dsv1alpha1.ConditionStalled)).Should(Equal("True/Canceled"))
		Expect(jobs.started()).To(Equal([]string{"first"}))
		Consistently(jobs.started).Should(Equal([]string{"first"}), "the deleted queued Execution never runs")
	})

	It("holds its deadline against a command that ignores it, and poisons the Sandbox with DeadlineExceeded", func() {
		start()
		ex := execution(ns, "stuck", "shell", "stubborn")
		ex.Spec.TimeoutSeconds = 1
		create(ex)

		Eventually(execState(ex)).Should(Equal("Failed/DeadlineExceeded"))
		cur := getExec(ex)
		Expect(cur.Status.FinishTime.Sub(cur.Status.StartTime.Time)).To(BeNumerically("<", 2*time.Second))
		Expect(cur.Status.ExitCode).To(BeNil())
		Expect(cur.Status.SandboxKilled).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, dsv1alpha1.ConditionStalled)).To(BeTrue())
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateExited))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/DeadlineExceeded"))
		Expect(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)()).To(Equal("True/DeadlineExceeded"), "the Execution's reason, not PrimaryExited")
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleHolder, "")).Should(Equal(dd.StateRunning), "the workspace is kept")

		// The poisoned Sandbox runs nothing more, and nothing is retried on its own.
		next := execution(ns, "next", "shell", "brief")
		create(next)
		Eventually(execState(next)).Should(Equal("Failed/SandboxNotReady"))
		Consistently(jobs.started).Should(Equal([]string{"stuck"}))
	})

	It("cuts output past the cap, bounded by the node's ceiling, and says so", func() {
		start(func(o *agent.Options) { o.MaxExecOutputBytes = 1000 })
		capped := execution(ns, "capped", "shell", "big")
		capped.Spec.MaxOutputBytes = 65536
		small := execution(ns, "small", "shell", "big")
		small.Spec.MaxOutputBytes = 10
		create(capped)
		create(small)

		Eventually(execState(capped)).Should(Equal("Failed/OutputLimitExceeded"))
		cur := getExec(capped)
		Expect(cur.Status.Stdout).To(HaveLen(1000), "the node's ceiling wins over a larger maxOutputBytes")
		Expect(cur.Status.StdoutTruncatedBytes).To(BeEquivalentTo(128<<10 - 1000))
		Expect(*cur.Status.ExitCode).To(BeEquivalentTo(0))
		Expect(cur.Status.Message).To(ContainSubstring("cut"))

		Eventually(execState(small)).Should(Equal("Failed/OutputLimitExceeded"))
		Expect(getExec(small).Status.Stdout).To(HaveLen(10))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"), "a cut output is no reason to stop the Sandbox")
	})

	It("ends an uncertain transport result as Lost: the container is stopped, the Sandbox poisoned, nothing retried", func() {
		start()
		a.docker.LoseNextResponse(fake.OpExec)
		ex := execution(ns, "lost", "shell", "brief")
		create(ex)

		Eventually(execState(ex)).Should(Equal("Failed/Lost"))
		Eventually(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).Should(Equal(dd.StateExited))
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/Lost"))
		Consistently(func() int { return a.docker.Calls(fake.OpExec) }).Should(Equal(1))
	})

	It("kills the container when the command leaves processes running, keeping its result", func() {
		start()
		ex := execution(ns, "detach", "shell", "detach")
		create(ex)

		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		Expect(getExec(ex).Status.Message).To(ContainSubstring("left 1 processes running"))
		Expect(getExec(ex).Status.SandboxKilled).To(BeTrue())
		Expect(getExec(ex).Status.Stdout).To(Equal("started"))
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/LeftoverProcesses"))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateExited))
	})

	It("waits for a Sandbox that is not Ready yet, or does not exist yet, and refuses a run Sandbox", func() {
		start()
		paused := sandbox(ns, "paused", a.node)
		paused.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
		create(paused)
		Eventually(phase(paused)).Should(Equal(dsv1alpha1.SandboxPaused))
		waiting := execution(ns, "waiting", "paused", "brief")
		create(waiting)
		Eventually(execState(waiting)).Should(Equal("Queued/" + dsv1alpha1.ReasonSandboxPaused))
		Expect(getExec(waiting).Status.Message).To(Equal("waiting for Sandbox paused to be resumed (spec.lifecycle: Running)"))
		Consistently(jobs.started).Should(BeEmpty())
		update(paused, func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecycleRunning })
		Eventually(execState(waiting)).Should(Equal("Succeeded/Completed"))

		early := execution(ns, "early", "later", "brief")
		create(early)
		Consistently(execState(early)).Should(Equal("/"), "no agent takes an Execution whose Sandbox is on no node")
		create(sandbox(ns, "later", a.node))
		Eventually(execState(early)).Should(Equal("Succeeded/Completed"))

		run := sandbox(ns, "run", a.node)
		run.Spec.Command = []string{"sleep", "60"}
		create(run)
		Eventually(phase(run)).Should(Equal(dsv1alpha1.SandboxRunning))
		refused := execution(ns, "refused", "run", "brief")
		create(refused)
		Eventually(execState(refused)).Should(Equal("Failed/SandboxNotReady"))
		Expect(getExec(refused).Status.Message).To(ContainSubstring("Executions run only in session Sandboxes"))
		Expect(jobs.started()).To(Equal([]string{"waiting", "early"}))

		// Taken, then its Sandbox goes: it fails rather than waiting for ever (the local control plane has no
		// garbage collector to delete it with its owner).
		update(paused, func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecyclePaused })
		Eventually(phase(paused)).Should(Equal(dsv1alpha1.SandboxPaused))
		orphaned := execution(ns, "orphaned", "paused", "brief")
		create(orphaned)
		Eventually(execState(orphaned)).Should(Equal("Queued/" + dsv1alpha1.ReasonSandboxPaused))
		Expect(k8s.Delete(ctx(), paused)).To(Succeed())
		Eventually(execState(orphaned)).Should(Equal("Failed/SandboxNotReady"))
		Expect(jobs.started()).NotTo(ContainElement("orphaned"))
	})

	It("is deleted ttlSecondsAfterFinished after it ended", func() {
		start()
		short, long := execution(ns, "short", "shell", "brief"), execution(ns, "long", "shell", "brief")
		short.Spec.TTLSecondsAfterFinished = ptr.To[int32](1)
		create(short)
		create(long)
		Eventually(execState(long)).Should(Equal("Succeeded/Completed"))
		Expect(*getExec(long).Spec.TTLSecondsAfterFinished).To(BeEquivalentTo(3600), "the default is an hour")
		Eventually(execState(short), 5*time.Second).Should(ContainSubstring("not found"))
		Consistently(execState(long)).Should(Equal("Succeeded/Completed"))
	})

	// orphan creates an Execution recorded Running with exec, as an agent gone since left it.
	orphan := func(exec *dsv1alpha1.ExecutionExec) *dsv1alpha1.Execution {
		ex := execution(ns, "orphan", "shell", "brief")
		cur := get(sbx)
		ex.OwnerReferences = []metav1.OwnerReference{{APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: cur.Name, UID: cur.UID, Controller: ptr.To(true)}}
		create(ex)
		now := metav1.NowMicro()
		ex.Status = dsv1alpha1.ExecutionStatus{Phase: dsv1alpha1.ExecutionRunning, NodeName: a.node, TopologyGeneration: 1, StartTime: &now, QueueTime: &now, Exec: exec}
		Expect(k8s.Status().Update(ctx(), ex)).To(Succeed())
		return ex
	}

	It("ends as Lost with nothing run when its agent stopped before the command started, and leaves the Sandbox alone", func() {
		start()
		a.stop()
		ex := orphan(nil)

		startAgent(a.node, a.docker)
		Eventually(execState(ex)).Should(Equal("Failed/Lost"))
		Expect(getExec(ex).Status.Message).To(ContainSubstring("nothing ran"))
		Expect(getExec(ex).Status.SandboxKilled).To(BeFalse())
		Consistently(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")()).To(Equal(dd.StateRunning))
		Expect(a.docker.Calls(fake.OpExec)).To(BeZero(), "it is never run")
	})

	It("ends as Lost when its command cannot be found again, and stops what it may still run", func() {
		start()
		a.stop()
		ex := orphan(&dsv1alpha1.ExecutionExec{ID: "exec-unknown"})

		startAgent(a.node, a.docker)
		Eventually(execState(ex)).Should(Equal("Failed/Lost"))
		Eventually(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).Should(Equal(dd.StateExited))
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/Lost"))
		Expect(a.docker.Calls(fake.OpExec)).To(BeZero(), "it is never run again")
	})

	It("reports commands its agent left running, ended meanwhile or still running, and the Sandbox stays Ready", func() {
		start()
		primary := func() string { return get(sbx).Status.ContainerID }
		before := primary()
		running := func(ex *dsv1alpha1.Execution) {
			GinkgoHelper()
			Eventually(func() *dsv1alpha1.ExecutionExec { return getExec(ex).Status.Exec }).ShouldNot(BeNil())
			Expect(getExec(ex).Status.Exec.ID).NotTo(BeEmpty())
		}

		By("one that ends while no agent runs")
		ended := execution(ns, "ended", "shell", "slow")
		create(ended)
		running(ended)
		a.stop()
		Eventually(jobs.finished).Should(ContainElement("ended"))
		a = startAgent(a.node, a.docker)
		Eventually(execState(ended)).Should(Equal("Failed/Error"))
		Expect(*getExec(ended).Status.ExitCode).To(BeEquivalentTo(5))
		Expect(getExec(ended).Status.Stdout).To(Equal("slow ended\n"))

		By("one still running when the next agent starts")
		later := execution(ns, "later", "shell", "slow")
		create(later)
		running(later)
		a.stop()
		a = startAgent(a.node, a.docker)
		Eventually(execState(later), 20*time.Second).Should(Equal("Failed/Error"))
		Expect(getExec(later).Status.Stdout).To(Equal("slow later\n"))

		Expect(a.docker.Calls(fake.OpExec)).To(Equal(2), "each ran once")
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))
		Expect(primary()).To(Equal(before), "the primary was never replaced")
	})
})

// execution is an Execution in ns of the job handler: command ["job", name, what].
func execution(ns, name, sandbox, what string) *dsv1alpha1.Execution {
	return &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.ExecutionSpec{SandboxName: sandbox, Command: []string{"job", name, what}},
	}
}

func getExec(ex *dsv1alpha1.Execution) *dsv1alpha1.Execution {
	GinkgoHelper()
	out := &dsv1alpha1.Execution{}
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(ex), out)).To(Succeed())
	return out
}

// execState polls an Execution's phase and reason, as "Phase/Reason" ("not found" once it is gone).
func execState(ex *dsv1alpha1.Execution) func() string {
	return func() string {
		cur := &dsv1alpha1.Execution{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ex), cur); err != nil {
			return err.Error()
		}
		return string(cur.Status.Phase) + "/" + cur.Status.Reason
	}
}

// execEventReasons polls the reasons of the Events recorded about an Execution.
func execEventReasons(ex *dsv1alpha1.Execution) func() []string {
	return eventReasons(&dsv1alpha1.Sandbox{ObjectMeta: ex.ObjectMeta})
}

// jobLog is an exec handler for commands ["job", name, what] that records which ran, in what order and how
// many at once. what: echo (stdin, env and workingDir back), brief (a short run), block (until cancelled),
// stubborn (ignores its deadline), slow (2 s, then exit 5 with output), big (128 KiB of output), detach (leaves a process running).
type jobLog struct {
	mu       sync.Mutex
	order    []string
	done     []string
	requests map[string]dd.ExecRequest
	now, top int
}

func newJobLog() *jobLog { return &jobLog{requests: map[string]dd.ExecRequest{}} }

func (l *jobLog) handle(ctx context.Context, _ string, req dd.ExecRequest) fake.ExecOutput {
	if len(req.Command) != 3 || req.Command[0] != "job" {
		return fake.ExecOutput{ExitCode: 127}
	}
	name, what := req.Command[1], req.Command[2]
	l.begin(name, req)
	defer l.end(name)
	switch what {
	case "echo":
		return fake.ExecOutput{
			Stdout: fmt.Appendf(nil, "stdin=%s env=%v wd=%s", req.Stdin, req.Env, req.WorkingDir),
			Stderr: []byte("a warning\n"),
		}
	case "brief":
		time.Sleep(100 * time.Millisecond)
	case "block":
		<-ctx.Done()
	case "stubborn":
		time.Sleep(5 * time.Second)
	case "slow":
		time.Sleep(2 * time.Second)
		return fake.ExecOutput{Stdout: []byte("slow " + name + "\n"), ExitCode: 5}
	case "big":
		return fake.ExecOutput{Stdout: []byte(strings.Repeat("x", 128<<10))}
	case "detach":
		return fake.ExecOutput{Stdout: []byte("started"), Survivors: 1}
	}
	return fake.ExecOutput{}
}

func (l *jobLog) begin(name string, req dd.ExecRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.order = append(l.order, name)
	l.requests[name] = req
	l.now++
	l.top = max(l.top, l.now)
}

func (l *jobLog) end(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.now--
	l.done = append(l.done, name)
}

// finished lists the jobs in the order they ended.
func (l *jobLog) finished() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.done)
}

// started lists the jobs in the order they started.
func (l *jobLog) started() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.order)
}

func (l *jobLog) mostAtOnce() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.top
}

func (l *jobLog) request(name string) dd.ExecRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests[name]
}
