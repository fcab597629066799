package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// TestDerivePhase covers every phase a Sandbox can be in, and each fact that leads there: the one function
// that decides them must say what each step used to set itself.
func TestDerivePhase(t *testing.T) {
	const reason, message = "SomeReason", "some words"
	type want struct {
		phase          dsv1alpha1.SandboxPhase
		ready, stalled bool
	}
	for _, tc := range []struct {
		name string
		in   observed
		want want
	}{
		{"waiting for room, a Secret, a Checkpoint or a subnet is Pending", observed{finding: finding{fact: factAwaiting}, lastPhase: dsv1alpha1.SandboxStarting},
			want{phase: dsv1alpha1.SandboxPending}},
		{"a Checkpoint that can never be restored is Pending and Stalled", observed{finding: finding{fact: factUnrestorable}},
			want{phase: dsv1alpha1.SandboxPending, stalled: true}},
		{"a lazy Sandbox is Pending and Ready", observed{finding: finding{fact: factLazy}}, want{phase: dsv1alpha1.SandboxPending, ready: true}},
		{"a missing SandboxService before the first generation is Pending", observed{finding: finding{fact: factServiceMissing}},
			want{phase: dsv1alpha1.SandboxPending}},
		{"a missing SandboxService later keeps the phase", observed{finding: finding{fact: factServiceMissing}, generation: 2, lastPhase: dsv1alpha1.SandboxStarting},
			want{phase: dsv1alpha1.SandboxStarting}},
		{"building is Starting", observed{finding: finding{fact: factBuilding}, generation: 1, lastPhase: dsv1alpha1.SandboxPending},
			want{phase: dsv1alpha1.SandboxStarting}},
		{"a running session is Running and Ready", observed{finding: finding{fact: factPrimaryRunning}, generation: 1},
			want{phase: dsv1alpha1.SandboxRunning, ready: true}},
		{"a run whose command goes on is Running, not Ready", observed{finding: finding{fact: factPrimaryRunning}, run: true, generation: 1},
			want{phase: dsv1alpha1.SandboxRunning}},
		{"a session waiting for an Execution's outcome is Running, not Ready", observed{finding: finding{fact: factAwaitingExecution}, generation: 1},
			want{phase: dsv1alpha1.SandboxRunning}},
		{"a frozen topology is Paused and Ready", observed{finding: finding{fact: factFrozen}, generation: 1, lastPhase: dsv1alpha1.SandboxRunning},
			want{phase: dsv1alpha1.SandboxPaused, ready: true}},
		{"a run that exited 0 is Succeeded and Ready", observed{finding: finding{fact: factSucceeded}, run: true, generation: 1},
			want{phase: dsv1alpha1.SandboxSucceeded, ready: true}},
		{"an end or refusal for good is Failed and Stalled", observed{finding: finding{fact: factFailed}, generation: 1, lastPhase: dsv1alpha1.SandboxRunning},
			want{phase: dsv1alpha1.SandboxFailed, stalled: true}},
		{"a retry keeps the phase", observed{finding: finding{fact: factRetrying}, generation: 1, lastPhase: dsv1alpha1.SandboxRunning},
			want{phase: dsv1alpha1.SandboxRunning}},
		{"a retry with no phase yet is Pending", observed{finding: finding{fact: factRetrying}}, want{phase: dsv1alpha1.SandboxPending}},
		{"a deletion is Terminating", observed{finding: finding{fact: factDeleting}, generation: 1, lastPhase: dsv1alpha1.SandboxFailed},
			want{phase: dsv1alpha1.SandboxTerminating}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.in.reason, tc.in.message = reason, message
			phase, sum := derivePhase(tc.in)
			g.Expect(phase).To(Equal(tc.want.phase))
			g.Expect(sum).To(Equal(status.Summary{Ready: tc.want.ready, Stalled: tc.want.stalled, Reason: reason, Message: message}))
		})
	}
}

// TestLastFinding: a pass that finds its start past the deadline before doing anything takes up what the last
// pass found, as its status says, so that the deadline's reason names what the start was stuck on.
func TestLastFinding(t *testing.T) {
	for _, tc := range []struct {
		name    string
		phase   dsv1alpha1.SandboxPhase
		stalled bool
		want    fact
	}{
		{"a start still going on is taken up as a retry, in its phase", dsv1alpha1.SandboxStarting, false, factRetrying},
		{"a refusal stays one", dsv1alpha1.SandboxFailed, true, factFailed},
		{"a Checkpoint that can never be restored stays Pending", dsv1alpha1.SandboxPending, true, factUnrestorable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sbx := atTopology(newSandbox("s"), 1)
			sbx.Status.Phase = tc.phase
			status.Summarize(sbx, status.Summary{Stalled: tc.stalled, Reason: dsv1alpha1.ReasonImagePulling, Message: "pulling"})
			f := lastFinding(sbx)
			g.Expect(f).To(Equal(finding{fact: tc.want, reason: dsv1alpha1.ReasonImagePulling, message: "pulling"}))
			phase, sum := derivePhase(observedOf(sbx, f))
			g.Expect(phase).To(Equal(tc.phase), "the phase it had")
			g.Expect(sum.Stalled).To(Equal(tc.stalled))
		})
	}
}
