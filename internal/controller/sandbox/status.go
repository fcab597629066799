package sandbox

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// summarize writes the conditions of a pass over a bound, admitted Sandbox, and the phase derived from what it
// found (derivePhase).
func (r *Reconciler) summarize(s *scope) {
	sbx := s.sbx
	sbx.Status.NodeName = r.Options.Node
	status.Set(sbx, dsv1alpha1.ConditionScheduled, true, dsv1alpha1.ReasonBound, fmt.Sprintf("bound to node %s", r.Options.Node))
	setServicesReady(s)
	if s.resolved {
		setServicesUpToDate(s)
	}
	status.SetDefault(sbx, dsv1alpha1.ConditionTopologyPoisoned, dsv1alpha1.ReasonHealthy, "no service or primary has failed")
	status.SetDefault(sbx, dsv1alpha1.ConditionPaused, dsv1alpha1.ReasonRunning, "not paused")
	applyFinding(sbx, s.finding)
}

// setServicesReady derives ServicesReady from the per-service states.
func setServicesReady(s *scope) {
	sbx := s.sbx
	if len(sbx.Spec.Services) == 0 {
		status.Set(sbx, dsv1alpha1.ConditionServicesReady, true, dsv1alpha1.ReasonAllReady, "the Sandbox declares no services")
		return
	}
	for _, st := range sbx.Status.Services {
		if st.State == dsv1alpha1.ServiceReady {
			continue
		}
		reason := dsv1alpha1.ReasonWaitingForServices
		if poisoned := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionTopologyPoisoned); (st.State == dsv1alpha1.ServiceFailed || st.State == dsv1alpha1.ServiceStopped) && poisoned != nil && poisoned.Status == metav1.ConditionTrue {
			reason = poisoned.Reason
		} else if st.State == dsv1alpha1.ServiceStopped {
			reason = dsv1alpha1.ReasonTopologyStopped
		}
		msg := fmt.Sprintf("service %q is %s", st.Name, st.State)
		if st.Message != "" {
			msg += ": " + st.Message
		}
		status.Set(sbx, dsv1alpha1.ConditionServicesReady, false, reason, msg)
		return
	}
	if len(sbx.Status.Services) < len(sbx.Spec.Services) {
		status.Set(sbx, dsv1alpha1.ConditionServicesReady, false, dsv1alpha1.ReasonWaitingForServices, "services not started yet")
		return
	}
	status.Set(sbx, dsv1alpha1.ConditionServicesReady, true, dsv1alpha1.ReasonAllReady, "every service passed readiness")
}

// setServicesUpToDate compares the generation each instance was built from with its SandboxService's own.
// SandboxServices whose names collide as they are now say so first: a topology that runs keeps the names
// it was built with, but its next roll would fail on them (checkNames), and this is where that shows before.
func setServicesUpToDate(s *scope) {
	sbx := s.sbx
	if msg, ok := topologyNameCollision(sbx, s.services); ok {
		status.Set(sbx, dsv1alpha1.ConditionServicesUpToDate, false, dsv1alpha1.ReasonNameCollision,
			msg+"; a topology that runs is left as it is, and no new one starts until the names are unique")
		return
	}
	built := map[string]int64{}
	for _, st := range sbx.Status.Services {
		built[st.Name] = st.ServiceGeneration
	}
	for i, name := range sbx.Spec.Services {
		svc := s.services[i]
		switch {
		case svc == nil:
			status.Set(sbx, dsv1alpha1.ConditionServicesUpToDate, false, dsv1alpha1.ReasonServiceNotFound,
				fmt.Sprintf("SandboxService %q does not exist", name))
			return
		case built[name] != 0 && built[name] != svc.Generation && svc.DeletionTimestamp.IsZero(): // deletion bumps it too
			status.Set(sbx, dsv1alpha1.ConditionServicesUpToDate, false, dsv1alpha1.ReasonOutOfDate,
				fmt.Sprintf("service %q runs generation %d of its SandboxService, which is at %d", name, built[name], svc.Generation))
			return
		}
	}
	status.Set(sbx, dsv1alpha1.ConditionServicesUpToDate, true, dsv1alpha1.ReasonUpToDate, "every service instance matches its SandboxService")
}
