package sandbox

import (
	"context"
	"fmt"
	"slices"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
)

// Step 5 of a pass, lifecycle: a built topology is paused or running as spec.lifecycle asks.
func (r *Reconciler) lifecycleSteps() []step {
	return []step{r.ensureLifecycle}
}

// pausedMessage is what a Sandbox frozen as its spec asks reports.
const pausedMessage = "frozen as spec.lifecycle asks; processes, memory and files are kept"

// ensureLifecycle freezes or thaws the topology as spec.lifecycle asks (cgroup freezer: processes, memory
// and files are kept). It freezes the primary first and thaws it last, so the untrusted code never runs
// while a service it talks to is frozen.
func (r *Reconciler) ensureLifecycle(ctx context.Context, s *scope) (bool, error) {
	pause := s.sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused
	if r.Freezes.Held(s.sbx.UID) {
		s.after(status.StaleRetry) // a capture froze the primary for a moment; look again once it has thawed it
		if pause && status.IsTrue(s.sbx, dsv1alpha1.ConditionPaused) {
			s.ready(dsv1alpha1.SandboxPaused, dsv1alpha1.ReasonPaused, pausedMessage) // frozen before the capture, and after it
		}
		return false, nil
	}
	order := s.topologyContainers() // services in start order, then the primary
	if pause {
		slices.Reverse(order)
	}
	changed := false
	for _, c := range order {
		var err error
		if !pause && c.State == dd.StatePaused {
			// Seen frozen when the pass began: a capture may have frozen it and thawed it since (it lets go of
			// its hold after the thaw), and thawing a running container is an error. Docker says which.
			if c, err = r.fresh(ctx, c); err != nil {
				status.Set(s.sbx, dsv1alpha1.ConditionPaused, false, dsv1alpha1.ReasonPauseFailed, "freezing or thawing the topology failed")
				return s.fail(dsv1alpha1.ReasonPauseFailed, "freezing or thawing "+c.Name, err)
			}
		}
		switch {
		case pause && c.State == dd.StateRunning:
			err = r.Driver.PauseContainer(ctx, c.Name)
		case !pause && c.State == dd.StatePaused:
			err = r.Driver.UnpauseContainer(ctx, c.Name)
		default:
			continue
		}
		if err != nil {
			status.Set(s.sbx, dsv1alpha1.ConditionPaused, false, dsv1alpha1.ReasonPauseFailed, "freezing or thawing the topology failed")
			return s.fail(dsv1alpha1.ReasonPauseFailed, "freezing or thawing "+c.Name, err)
		}
		changed = true
	}
	if !pause {
		status.Set(s.sbx, dsv1alpha1.ConditionPaused, false, dsv1alpha1.ReasonRunning, "not paused")
		if changed {
			r.event(s.sbx, false, EventResumed, "Resume", "every container of the Sandbox thawed")
		}
		return false, nil
	}
	status.Set(s.sbx, dsv1alpha1.ConditionPaused, true, dsv1alpha1.ReasonPaused, "every container of the Sandbox is frozen")
	s.ready(dsv1alpha1.SandboxPaused, dsv1alpha1.ReasonPaused, pausedMessage)
	if changed {
		r.event(s.sbx, false, EventPaused, "Pause", "every container of the Sandbox frozen")
	}
	return false, nil
}

// topologyContainers are the current generation's services in start order, then its primary, as observed
// (updated by the steps of this pass).
func (s *scope) topologyContainers() []dd.ContainerInfo {
	var out []dd.ContainerInfo
	for _, name := range s.sbx.Spec.Services {
		if c, ok := s.containers[s.serviceName(name)]; ok {
			out = append(out, c)
		}
	}
	if c, ok := s.containers[s.primaryName()]; ok {
		out = append(out, c)
	}
	return out
}

// fresh is c as Docker has it now; on an error, c as it was seen.
func (r *Reconciler) fresh(ctx context.Context, c dd.ContainerInfo) (dd.ContainerInfo, error) {
	now, err := r.Driver.ObserveContainer(ctx, c.Name)
	if err != nil {
		return c, fmt.Errorf("observing container %s: %w", c.Name, err)
	}
	return now, nil
}
