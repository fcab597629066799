package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/handoff"
)

// handOver hands a verdict over as an Execution's run does and returns the outcome of its wait, which ends
// once the verdict is written or moot.
func (h *harness) handOver(v handoff.Verdict) <-chan error {
	h.t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.r.Verdicts.Poison(h.ctx, v) }()
	select {
	case <-h.poisons:
	case <-time.After(time.Minute):
		h.t.Fatal("the verdict was never handed over")
	}
	return done
}

// pending tells whether a verdict on sbx still waits to be settled.
func (h *harness) pending(sbx *dsv1alpha1.Sandbox) bool {
	_, ok := h.r.Verdicts.Take(sbx)
	return ok
}

// verdictOn is an Execution's verdict on topology generation gen of sbx.
func verdictOn(sbx *dsv1alpha1.Sandbox, gen int64) handoff.Verdict {
	return handoff.Verdict{
		Sandbox: client.ObjectKeyFromObject(sbx), UID: sbx.UID, Generation: gen,
		Reason: dsv1alpha1.ReasonDeadlineExceeded, Message: `Execution "e" ran past its timeout; its command was killed`,
	}
}

func TestApplyVerdict(t *testing.T) {
	running := func() *dsv1alpha1.Sandbox {
		sbx := withStarted(atTopology(newSandbox("s"), 2))
		sbx.Generation = 3
		return sbx
	}
	for _, tc := range []struct {
		name    string
		sbx     *dsv1alpha1.Sandbox
		verdict func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict // nil: none handed over
		applied bool                                           // returned, its condition written
		settled bool                                           // its wait ended at once (moot)
		reason  string                                         // TopologyPoisoned reason after; "" for none
	}{
		{
			name: "no verdict: nothing to write",
			sbx:  running(),
		},
		{
			name:    "a verdict on the current generation is written, and its wait lasts until the write stands",
			sbx:     running(),
			verdict: func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict { v := verdictOn(sbx, 2); return &v },
			applied: true,
			reason:  dsv1alpha1.ReasonDeadlineExceeded,
		},
		{
			name:    "a verdict on a generation rolled since is moot",
			sbx:     running(),
			verdict: func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict { v := verdictOn(sbx, 1); return &v },
			settled: true,
		},
		{
			name:    "a verdict on a generation the cache does not show yet waits for it",
			sbx:     running(),
			verdict: func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict { v := verdictOn(sbx, 3); return &v },
		},
		{
			name:    "a verdict on a topology poisoned already is moot; the first reason stays",
			sbx:     poisonedBy(running(), dsv1alpha1.ReasonServiceExited, `service "db" stopped with exit code 1`),
			verdict: func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict { v := verdictOn(sbx, 2); return &v },
			settled: true,
			reason:  dsv1alpha1.ReasonServiceExited,
		},
		{
			name: "a verdict on a Sandbox replaced since is moot",
			sbx:  running(),
			verdict: func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict {
				v := verdictOn(sbx, 2)
				v.UID = "uid-of-the-one-before"
				return &v
			},
			settled: true,
		},
		{
			name: "a verdict on a Sandbox being deleted is moot",
			sbx: func() *dsv1alpha1.Sandbox {
				sbx := running()
				sbx.DeletionTimestamp = &metav1.Time{Time: time.Now()}
				return sbx
			}(),
			verdict: func(sbx *dsv1alpha1.Sandbox) *handoff.Verdict { v := verdictOn(sbx, 2); return &v },
			settled: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness(t)
			var done <-chan error
			if tc.verdict != nil {
				done = h.handOver(*tc.verdict(tc.sbx))
			}

			got := h.r.applyVerdict(h.ctx, tc.sbx)

			g.Expect(got != nil).To(Equal(tc.applied), "applied")
			c := condition(tc.sbx, dsv1alpha1.ConditionTopologyPoisoned)
			g.Expect(c.Reason).To(Equal(tc.reason))
			if tc.applied {
				g.Expect(*got).To(Equal(*tc.verdict(tc.sbx)))
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Message).To(Equal(got.Message))
				g.Expect(c.ObservedGeneration).To(Equal(tc.sbx.Generation))
			}
			if tc.verdict == nil {
				return
			}
			g.Expect(h.pending(tc.sbx)).To(Equal(!tc.settled), "still pending")
			if tc.settled {
				g.Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()), "the wait ends once the verdict is moot")
			}
		})
	}
}
