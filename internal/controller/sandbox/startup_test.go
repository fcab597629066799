package sandbox

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
	"github.com/dockside-dev/dockside/internal/topology"
)

// alarm is the wakeup set for the Sandbox of s; zero when none is.
func (h *harness) alarm(s *scope) time.Time {
	return h.r.Wake.Due(s.key())
}

// startedAgo records a start of topology generation gen that began ago.
func startedAgo(sbx *dsv1alpha1.Sandbox, gen int64, ago time.Duration) *dsv1alpha1.Sandbox {
	sbx.Status.Startup = &dsv1alpha1.StartupStatus{TopologyGeneration: gen, StartTime: metav1.NewMicroTime(time.Now().Add(-ago).Truncate(time.Microsecond))}
	return sbx
}

func TestTrackStartup(t *testing.T) {
	clockStarted := func(gen int64, deadline time.Duration) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			st := s.sbx.Status.Startup
			g.Expect(st.TopologyGeneration).To(Equal(gen))
			g.Expect(st.StartTime.Time).To(BeTemporally("~", time.Now(), time.Minute))
			g.Expect(s.startupDeadline).To(Equal(st.StartTime.Add(deadline)))
			g.Expect(h.alarm(s)).To(Equal(s.startupDeadline), "a wakeup comes at the deadline whatever else happens")
		}
	}
	notTracked := func(g Gomega, h *harness, s *scope) {
		g.Expect(s.sbx.Status.Startup).To(BeNil())
		g.Expect(s.startupDeadline.IsZero()).To(BeTrue())
		g.Expect(h.alarm(s).IsZero()).To(BeTrue())
	}
	runStepCases(t, (*Reconciler).trackStartup, []stepCase{
		{
			name:  "a start's clock starts at its first pass, with the default deadline",
			sbx:   atTopology(newSandbox("s"), 1),
			check: clockStarted(1, dsv1alpha1.DefaultStartupDeadlineSeconds*time.Second),
		},
		{
			name: "startupDeadlineSeconds sets the deadline",
			sbx: atTopology(newSandbox("s", func(sbx *dsv1alpha1.Sandbox) {
				sbx.Spec.StartupDeadlineSeconds = 30
			}), 1),
			check: clockStarted(1, 30*time.Second),
		},
		{
			name:  "the clock of an earlier generation's start is started again",
			sbx:   startedAgo(atTopology(newSandbox("s"), 2), 1, time.Hour),
			check: clockStarted(2, dsv1alpha1.DefaultStartupDeadlineSeconds*time.Second),
		},
		{
			name:  "a start that is over is not tracked",
			sbx:   withStarted(atTopology(newSandbox("s"), 1)),
			check: notTracked,
		},
		{
			name:   "a start that is over drops the wakeup its deadline asked for",
			sbx:    withStarted(atTopology(newSandbox("s"), 1)),
			docker: func(h *harness, s *scope) { h.r.Wake.At(s.key(), time.Now().Add(time.Hour)) },
			check:  notTracked,
		},
		{
			name:   "a primary Docker shows started counts, though its status write was lost",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			check:  notTracked,
		},
		{
			name: "past its deadline the start stands where the last pass left it",
			sbx: withCondition(startedAgo(atTopology(newSandbox("s"), 1), 1, time.Hour),
				dsv1alpha1.ConditionReady, false, dsv1alpha1.ReasonImagePulling, "pulling image x for the primary container"),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonImagePulling},
			message: "pulling image x for the primary container",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.Startup.StartTime.Time).To(BeTemporally("<", time.Now().Add(-time.Minute)), "the clock is not restarted")
				g.Expect(h.alarm(s).IsZero()).To(BeTrue())
			},
		},
	})
}

func TestEnforceStartupDeadline(t *testing.T) {
	passErr := errors.New("the pass's own error")
	for _, tc := range []struct {
		name     string
		sbx      *dsv1alpha1.Sandbox
		deadline time.Duration // from now; 0: none tracked
		finding  finding
		reason   string // TopologyPoisoned reason; "" for not poisoned (the pass's error then stands)
	}{
		{name: "no start tracked", sbx: atTopology(newSandbox("s"), 1), finding: newScope(newSandbox("s")).finding},
		{name: "before the deadline", sbx: atTopology(newSandbox("s"), 1), deadline: time.Minute, finding: newScope(newSandbox("s")).finding},
		{name: "a start that is over", sbx: withStarted(atTopology(newSandbox("s"), 1)), deadline: -time.Minute, finding: newScope(newSandbox("s")).finding},
		{
			name: "a slow pull is an ImagePullTimeout", sbx: atTopology(newSandbox("s"), 1), deadline: -time.Second,
			finding: finding{fact: factBuilding, reason: dsv1alpha1.ReasonImagePulling}, reason: dsv1alpha1.ReasonImagePullTimeout,
		},
		{
			name: "a service never ready is ServiceNotReady", sbx: atTopology(newSandbox("s"), 1), deadline: -time.Second,
			finding: finding{fact: factBuilding, reason: dsv1alpha1.ReasonWaitingForServices}, reason: dsv1alpha1.ReasonServiceNotReady,
		},
		{
			name: "a refusal the start was Stalled on keeps its reason", sbx: atTopology(newSandbox("s"), 1), deadline: -time.Second,
			finding: finding{fact: factFailed, reason: dsv1alpha1.ReasonImageFailed}, reason: dsv1alpha1.ReasonImageFailed,
		},
		{
			name: "a reason with no slow phase behind it is kept", sbx: atTopology(newSandbox("s"), 1), deadline: -time.Second,
			finding: finding{fact: factRetrying, reason: dsv1alpha1.ReasonDockerUnavailable}, reason: dsv1alpha1.ReasonDockerUnavailable,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness(t)
			s := newScope(tc.sbx)
			s.finding = tc.finding
			if tc.deadline != 0 {
				s.startupDeadline = time.Now().Add(tc.deadline)
			}
			err := h.r.enforceStartupDeadline(h.ctx, s, passErr)
			if tc.reason == "" {
				g.Expect(err).To(Equal(passErr))
				g.Expect(topology.Poisoned(s.sbx)).To(BeFalse())
				g.Expect(s.finding).To(Equal(tc.finding))
				g.Expect(recorder.Drain(h.events)).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), "nothing is retried once the start has failed")
			g.Expect(condition(s.sbx, dsv1alpha1.ConditionTopologyPoisoned).Reason).To(Equal(tc.reason))
			g.Expect(topology.Poisoned(s.sbx)).To(BeTrue())
			got := outcomeOf(s)
			g.Expect(got.phase).To(Equal(dsv1alpha1.SandboxFailed))
			g.Expect(got.stalled).To(BeTrue())
			g.Expect(got.reason).To(Equal(tc.reason))
			g.Expect(got.message).To(ContainSubstring("startupDeadlineSeconds"))
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Warning " + EventStartupFailed}))
		})
	}
}
