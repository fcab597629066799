package execution

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestJudge(t *testing.T) {
	ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: dsv1alpha1.ExecutionSpec{TimeoutSeconds: 1}}
	uncertain := dd.NewError(dd.KindUncertain, dd.PhaseExec, "c", "the output stream broke")
	for _, tc := range []struct {
		name     string
		res      dd.ExecResult
		err      error
		stopping bool
		phase    dsv1alpha1.ExecutionPhase
		reason   string
		poison   string
		stop     bool
		exit     *int32
	}{
		{name: "exit 0", res: dd.ExecResult{Reason: dd.ExecCompleted}, phase: dsv1alpha1.ExecutionSucceeded, reason: dsv1alpha1.ReasonCompleted, exit: code(0)},
		{name: "exit 3", res: dd.ExecResult{Reason: dd.ExecCompleted, ExitCode: 3}, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonError, exit: code(3)},
		{name: "output cut", res: dd.ExecResult{Reason: dd.ExecCompleted, StderrCut: 1}, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonOutputLimitExceeded, exit: code(0)},
		{name: "deadline", res: dd.ExecResult{Reason: dd.ExecDeadlineExceeded, ContainerKilled: true}, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonDeadlineExceeded, poison: dsv1alpha1.ReasonDeadlineExceeded},
		{name: "deadline, kill failed", res: dd.ExecResult{Reason: dd.ExecDeadlineExceeded}, err: uncertain, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonDeadlineExceeded, poison: dsv1alpha1.ReasonDeadlineExceeded},
		{name: "deleted", res: dd.ExecResult{Reason: dd.ExecCanceled, ContainerKilled: true}, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonCanceled, poison: dsv1alpha1.ReasonCanceled},
		{name: "deleted while supervised: the container is left to the caller", res: dd.ExecResult{Reason: dd.ExecCanceled}, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonCanceled, poison: dsv1alpha1.ReasonCanceled, stop: true},
		{name: "agent stopping", res: dd.ExecResult{Reason: dd.ExecCanceled, ContainerKilled: true}, stopping: true, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonCanceled, poison: dsv1alpha1.ReasonCanceled},
		{name: "not running", err: dd.NewError(dd.KindConflict, dd.PhaseExec, "c", "paused"), phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonSandboxNotReady},
		{name: "gone", err: dd.NewError(dd.KindNotFound, dd.PhaseExec, "c", ""), phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonSandboxNotReady},
		{name: "daemon down", err: dd.NewError(dd.KindUnavailable, dd.PhaseExec, "c", ""), phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonSandboxNotReady},
		{name: "uncertain", err: uncertain, phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonLost, poison: dsv1alpha1.ReasonLost, stop: true},
		{name: "foreign error", err: errors.New("boom"), phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonLost, poison: dsv1alpha1.ReasonLost, stop: true},
		{name: "survivors", res: dd.ExecResult{Reason: dd.ExecCompleted, Survivors: 2, ContainerKilled: true}, phase: dsv1alpha1.ExecutionSucceeded, reason: dsv1alpha1.ReasonCompleted, poison: dsv1alpha1.ReasonLeftoverProcesses, exit: code(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := judge(ex, tc.res, tc.err, tc.stopping)
			g.Expect(v.phase).To(Equal(tc.phase))
			g.Expect(v.reason).To(Equal(tc.reason))
			g.Expect(v.poison).To(Equal(tc.poison))
			g.Expect(v.stop).To(Equal(tc.stop))
			g.Expect(v.exitCode).To(Equal(tc.exit))
			g.Expect(v.message).NotTo(BeEmpty())
			if tc.stopping {
				g.Expect(v.message).To(ContainSubstring("agent stopped"))
			}
		})
	}
}

func code(i int32) *int32 { return &i }

// TestCutMessageSaysAtLeastWhenNotAllWasRead: the driver counts a file far past the cap by its size and
// reads nothing after it; the message says the counts are lower bounds.
func TestCutMessageSaysAtLeastWhenNotAllWasRead(t *testing.T) {
	g := NewWithT(t)
	ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: dsv1alpha1.ExecutionSpec{TimeoutSeconds: 10}}
	v := judge(ex, dd.ExecResult{Reason: dd.ExecCompleted, StdoutCut: 8<<30 - 256<<10, CutUnread: true}, nil, false)
	g.Expect(v.reason).To(Equal(dsv1alpha1.ReasonOutputLimitExceeded))
	g.Expect(v.message).To(Equal("the command exited with code 0; output past the cap was cut " +
		"(at least 8589672448 bytes of stdout, 0 of stderr: the rest was not read back)"))
	v = judge(ex, dd.ExecResult{Reason: dd.ExecCompleted, CutUnread: true}, nil, false)
	g.Expect(v.reason).To(Equal(dsv1alpha1.ReasonOutputLimitExceeded), "a read that ran out of time is not a whole output")
}

func TestHeadText(t *testing.T) {
	g := NewWithT(t)
	s, cut := headText([]byte("héllo"), 0)
	g.Expect(s).To(Equal("héllo"))
	g.Expect(cut).To(BeZero())

	// "é" is two bytes: a cap between them drops the first and counts it.
	s, cut = headText([]byte("h\xc3"), 4)
	g.Expect(s).To(Equal("h"))
	g.Expect(cut).To(BeEquivalentTo(5))

	s, _ = headText([]byte("a\xffb"), 0)
	g.Expect(s).To(Equal("a\uFFFDb"))
}

func TestKeptOutputStaysWithinBudget(t *testing.T) {
	g := NewWithT(t)
	// '<' is six bytes in JSON: 256 KiB of it on both streams would be 3 MiB in etcd.
	big := []byte(strings.Repeat("<", 256<<10))
	out, outCut, errOut, errCut := keptOutput(dd.ExecResult{Stdout: big, Stderr: big, StdoutCut: 10})
	g.Expect(jsonSize(out) + jsonSize(errOut)).To(BeNumerically("<=", outputBudget))
	g.Expect(int64(len(out)) + outCut).To(BeEquivalentTo(len(big) + 10))
	g.Expect(int64(len(errOut)) + errCut).To(BeEquivalentTo(len(big)))

	small := []byte("fine\n")
	out, outCut, _, _ = keptOutput(dd.ExecResult{Stdout: small})
	g.Expect(out).To(Equal("fine\n"))
	g.Expect(outCut).To(BeZero())

	g.Expect(utf8.ValidString(first(halve("ééé", 0)))).To(BeTrue())
}

func stamp(ex *dsv1alpha1.Execution) *metav1.MicroTime { return ex.Status.QueueTime }

func first(s string, _ int64) string { return s }

func TestQueuedBefore(t *testing.T) {
	g := NewWithT(t)
	sec := metav1.NewTime(time.Unix(100, 0))
	at := func(name string, created metav1.Time, seen *time.Time) *dsv1alpha1.Execution {
		ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}}
		if seen != nil {
			mt := metav1.NewMicroTime(*seen)
			ex.Status.QueueTime = &mt
		}
		return ex
	}
	t1, t2 := time.Unix(100, 100_000), time.Unix(100, 200_000)
	g.Expect(queuedBefore(at("z", sec, &t1), at("a", sec, &t2), stamp)).To(BeTrue(), "same second: the order the agent saw")
	g.Expect(queuedBefore(at("a", sec, &t2), at("z", sec, &t1), stamp)).To(BeFalse())
	g.Expect(queuedBefore(at("z", sec, &t2), at("a", sec, nil), stamp)).To(BeTrue(), "one not seen yet comes after")
	g.Expect(queuedBefore(at("a", sec, nil), at("b", sec, nil), stamp)).To(BeTrue(), "then by name")
	later := metav1.NewTime(time.Unix(101, 0))
	g.Expect(queuedBefore(at("a", later, &t1), at("z", sec, &t2), stamp)).To(BeFalse(), "creation second first")
}
