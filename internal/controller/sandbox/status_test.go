package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestSummarize(t *testing.T) {
	db := newService("db", func(svc *dsv1alpha1.SandboxService) { svc.Generation = 2 })
	withDB := func(state dsv1alpha1.ServiceState, built int64) *dsv1alpha1.Sandbox {
		sbx := atTopology(newSandbox("s", withServices("db")), 1, db)
		sbx.Status.Services[0].State, sbx.Status.Services[0].ServiceGeneration = state, built
		return sbx
	}
	running := finding{fact: factPrimaryRunning, reason: dsv1alpha1.ReasonRunning, message: "the primary container is running"}
	type cond struct {
		on     bool
		reason string
	}
	for _, tc := range []struct {
		name     string
		sbx      *dsv1alpha1.Sandbox
		services []*dsv1alpha1.SandboxService // what resolveSpec read; nil: it did not run
		finding  finding
		phase    dsv1alpha1.SandboxPhase
		want     map[string]cond // conditions that must be so; absent from the map: not checked
		absent   []string        // conditions that must not be set
	}{
		{
			name: "a running session without services", sbx: atTopology(newSandbox("s"), 1), services: []*dsv1alpha1.SandboxService{},
			finding: running, phase: dsv1alpha1.SandboxRunning,
			want: map[string]cond{
				dsv1alpha1.ConditionScheduled: {true, dsv1alpha1.ReasonBound}, dsv1alpha1.ConditionServicesReady: {true, dsv1alpha1.ReasonAllReady},
				dsv1alpha1.ConditionServicesUpToDate: {true, dsv1alpha1.ReasonUpToDate}, dsv1alpha1.ConditionTopologyPoisoned: {false, dsv1alpha1.ReasonHealthy},
				dsv1alpha1.ConditionPaused: {false, dsv1alpha1.ReasonRunning}, dsv1alpha1.ConditionReady: {true, dsv1alpha1.ReasonRunning},
				dsv1alpha1.ConditionReconciling: {false, dsv1alpha1.ReasonRunning}, dsv1alpha1.ConditionStalled: {false, dsv1alpha1.ReasonRunning},
			},
		},
		{
			name: "a service still starting", sbx: withDB(dsv1alpha1.ServiceStarting, 2), services: []*dsv1alpha1.SandboxService{db},
			finding: finding{fact: factBuilding, reason: dsv1alpha1.ReasonWaitingForServices}, phase: dsv1alpha1.SandboxStarting,
			want: map[string]cond{
				dsv1alpha1.ConditionServicesReady: {false, dsv1alpha1.ReasonWaitingForServices}, dsv1alpha1.ConditionReady: {false, dsv1alpha1.ReasonWaitingForServices},
				dsv1alpha1.ConditionReconciling: {true, dsv1alpha1.ReasonWaitingForServices}, dsv1alpha1.ConditionStalled: {false, dsv1alpha1.ReasonWaitingForServices},
			},
		},
		{
			name: "a failed service of a poisoned topology says why", services: []*dsv1alpha1.SandboxService{db},
			sbx:     poisonedBy(withDB(dsv1alpha1.ServiceFailed, 2), dsv1alpha1.ReasonServiceExited, `service "db" stopped`),
			finding: finding{fact: factFailed, reason: dsv1alpha1.ReasonServiceExited}, phase: dsv1alpha1.SandboxFailed,
			want: map[string]cond{
				dsv1alpha1.ConditionServicesReady: {false, dsv1alpha1.ReasonServiceExited}, dsv1alpha1.ConditionTopologyPoisoned: {true, dsv1alpha1.ReasonServiceExited},
				dsv1alpha1.ConditionReady: {false, dsv1alpha1.ReasonServiceExited}, dsv1alpha1.ConditionReconciling: {false, dsv1alpha1.ReasonServiceExited},
				dsv1alpha1.ConditionStalled: {true, dsv1alpha1.ReasonServiceExited},
			},
		},
		{
			name: "services not started yet", services: []*dsv1alpha1.SandboxService{db},
			sbx: func() *dsv1alpha1.Sandbox {
				sbx := withDB(dsv1alpha1.ServicePending, 0)
				sbx.Status.Services = nil
				return sbx
			}(),
			finding: newScope(newSandbox("s")).finding, phase: dsv1alpha1.SandboxStarting,
			want: map[string]cond{dsv1alpha1.ConditionServicesReady: {false, dsv1alpha1.ReasonWaitingForServices}},
		},
		{
			name: "a service built from an older generation of its SandboxService is out of date", services: []*dsv1alpha1.SandboxService{db},
			sbx: withDB(dsv1alpha1.ServiceReady, 1), finding: running, phase: dsv1alpha1.SandboxRunning,
			want: map[string]cond{
				dsv1alpha1.ConditionServicesReady: {true, dsv1alpha1.ReasonAllReady}, dsv1alpha1.ConditionServicesUpToDate: {false, dsv1alpha1.ReasonOutOfDate},
				dsv1alpha1.ConditionReady: {true, dsv1alpha1.ReasonRunning},
			},
		},
		{
			name: "a SandboxService being deleted (its generation bumped) is not out of date", sbx: withDB(dsv1alpha1.ServiceReady, 1),
			services: []*dsv1alpha1.SandboxService{newService("db", func(svc *dsv1alpha1.SandboxService) {
				svc.Generation, svc.DeletionTimestamp = 2, &metav1.Time{Time: time.Now()}
			})},
			finding: running, phase: dsv1alpha1.SandboxRunning,
			want: map[string]cond{dsv1alpha1.ConditionServicesUpToDate: {true, dsv1alpha1.ReasonUpToDate}},
		},
		{
			name: "a SandboxService that does not exist", sbx: withDB(dsv1alpha1.ServiceReady, 2), services: []*dsv1alpha1.SandboxService{nil},
			finding: running, phase: dsv1alpha1.SandboxRunning,
			want: map[string]cond{dsv1alpha1.ConditionServicesUpToDate: {false, dsv1alpha1.ReasonServiceNotFound}},
		},
		{
			name: "a pass that did not read the SandboxServices leaves ServicesUpToDate alone", sbx: withDB(dsv1alpha1.ServiceReady, 1),
			finding: running, phase: dsv1alpha1.SandboxRunning, absent: []string{dsv1alpha1.ConditionServicesUpToDate},
		},
		{
			name: "a retry with no phase before is Pending", sbx: newSandbox("s"),
			finding: finding{fact: factRetrying, reason: dsv1alpha1.ReasonDockerUnavailable}, phase: dsv1alpha1.SandboxPending,
			want: map[string]cond{dsv1alpha1.ConditionReconciling: {true, dsv1alpha1.ReasonDockerUnavailable}},
		},
		{
			name: "defaults never overwrite what a step set", sbx: withCondition(poisonedBy(atTopology(newSandbox("s"), 1), dsv1alpha1.ReasonPrimaryExited, "x"),
				dsv1alpha1.ConditionPaused, true, dsv1alpha1.ReasonPaused, "frozen"),
			finding: finding{fact: factFailed, reason: dsv1alpha1.ReasonPrimaryExited}, phase: dsv1alpha1.SandboxFailed,
			want: map[string]cond{
				dsv1alpha1.ConditionTopologyPoisoned: {true, dsv1alpha1.ReasonPrimaryExited}, dsv1alpha1.ConditionPaused: {true, dsv1alpha1.ReasonPaused},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &Reconciler{Options: Options{Node: testNode}}
			tc.sbx.Generation = 5
			s := newScope(tc.sbx)
			s.services, s.resolved, s.finding = tc.services, tc.services != nil, tc.finding

			r.summarize(s)

			st := tc.sbx.Status
			g.Expect(st.NodeName).To(Equal(testNode))
			g.Expect(st.Phase).To(Equal(tc.phase))
			for typ, want := range tc.want {
				c := condition(tc.sbx, typ)
				g.Expect(c.Status == metav1.ConditionTrue).To(Equal(want.on), typ)
				g.Expect(c.Reason).To(Equal(want.reason), typ)
			}
			for _, typ := range tc.absent {
				g.Expect(condition(tc.sbx, typ).Type).To(BeEmpty(), typ)
			}
			for _, c := range st.Conditions {
				g.Expect(c.ObservedGeneration).To(Equal(int64(5)), "every condition is observed at the object's generation: "+c.Type)
			}
			ready, stalled := condition(tc.sbx, dsv1alpha1.ConditionReady), condition(tc.sbx, dsv1alpha1.ConditionStalled)
			want := outcomeOf(s)
			g.Expect(ready.Status == metav1.ConditionTrue).To(Equal(want.ready))
			g.Expect(stalled.Status == metav1.ConditionTrue).To(Equal(want.stalled))
		})
	}
}
