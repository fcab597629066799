package sandbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
)

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
			s.note(factFrozen, dsv1alpha1.ReasonPaused, pausedMessage) // frozen before the capture, and after it
		}
		return false, nil
	}
	if !pause && r.Idle.Paused(s.sbx.UID) {
		frozen := !slices.ContainsFunc(s.topologyContainers(), func(c dd.ContainerInfo) bool { return c.State != dd.StatePaused })
		if idleAfter(s.sbx) > 0 && frozen {
			r.idlePaused(s, false) // stays frozen until a command's call thaws it (handoff.Idle.Use)
			return false, nil
		}
		// idlePauseSeconds was removed while it was frozen, or something thawed a container of it (a
		// Checkpoint capture thaws the primary it froze): thawed as a call would, then running below.
		done, _, err := r.Idle.Use(ctx, client.ObjectKeyFromObject(s.sbx), s.sbx.UID)
		if err != nil {
			status.Set(s.sbx, dsv1alpha1.ConditionPaused, true, dsv1alpha1.ReasonPauseFailed, "thawing the idle topology failed")
			return s.fail(dsv1alpha1.ReasonPauseFailed, "thawing the idle topology", err)
		}
		done()
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
		if paused, err := r.pauseIfIdle(ctx, s); paused || err != nil {
			return false, err
		}
		wasIdle := dsv1alpha1.IdlePaused(s.sbx) // a call thawed it since the last pass (handoff.Idle.Use)
		status.Set(s.sbx, dsv1alpha1.ConditionPaused, false, dsv1alpha1.ReasonRunning, "not paused")
		switch {
		case changed:
			r.event(s.sbx, false, EventResumed, "Resume", "every container of the Sandbox thawed")
		case wasIdle:
			r.event(s.sbx, false, EventResumed, "Resume", "thawed from its idle pause")
		}
		return false, nil
	}
	status.Set(s.sbx, dsv1alpha1.ConditionPaused, true, dsv1alpha1.ReasonPaused, "every container of the Sandbox is frozen")
	s.note(factFrozen, dsv1alpha1.ReasonPaused, pausedMessage)
	if changed {
		r.event(s.sbx, false, EventPaused, "Pause", "every container of the Sandbox frozen")
	}
	return false, nil
}

// idleAfter is how long the Sandbox may run no command before it is frozen for idleness; 0: never.
func idleAfter(sbx *dsv1alpha1.Sandbox) time.Duration {
	if sbx.Spec.IdlePauseSeconds == nil || len(sbx.Spec.Command) > 0 {
		return 0
	}
	return time.Duration(*sbx.Spec.IdlePauseSeconds) * time.Second
}

// pauseIfIdle freezes a running, Ready session that ran no command for spec.idlePauseSeconds
// (docs/design/idle-pause.md), or asks for a pass when it may be idle long enough. It says whether the
// Sandbox is frozen for idleness now.
func (r *Reconciler) pauseIfIdle(ctx context.Context, s *scope) (bool, error) {
	after := idleAfter(s.sbx)
	if phase, sum := s.phase(); after == 0 || !sum.Ready || phase != dsv1alpha1.SandboxRunning {
		return false, nil
	}
	paused, wait, err := r.Idle.PauseIfIdle(s.sbx.UID, after, func() ([]string, error) { return r.freezeIdle(ctx, s) })
	switch {
	case err != nil:
		status.Set(s.sbx, dsv1alpha1.ConditionPaused, false, dsv1alpha1.ReasonPauseFailed, "freezing the idle topology failed")
		_, err = s.fail(dsv1alpha1.ReasonPauseFailed, "freezing the idle topology", err)
		return false, err
	case !paused:
		s.after(wait)
		return false, nil
	}
	r.idlePaused(s, true)
	return true, nil
}

// freezeIdle freezes the running containers of the topology, the primary first; it returns them in the order
// frozen. On an error it thaws what it froze.
func (r *Reconciler) freezeIdle(ctx context.Context, s *scope) ([]string, error) {
	order := s.topologyContainers()
	slices.Reverse(order)
	var frozen []string
	for _, c := range order {
		if c.State != dd.StateRunning {
			continue
		}
		if err := r.Driver.PauseContainer(ctx, c.Name); err != nil {
			for _, name := range slices.Backward(frozen) {
				_ = r.Driver.UnpauseContainer(ctx, name) // best effort: the pass's retry finds what stayed frozen
			}
			return nil, fmt.Errorf("freezing %s: %w", c.Name, err)
		}
		frozen = append(frozen, c.Name)
	}
	return frozen, nil
}

// idlePaused reports a Sandbox frozen for idleness: Paused, and Ready, since its next command thaws it.
func (r *Reconciler) idlePaused(s *scope, now bool) {
	msg := fmt.Sprintf("frozen after %d s without a command (spec.idlePauseSeconds); the next command or data plane call resumes it", *s.sbx.Spec.IdlePauseSeconds)
	status.Set(s.sbx, dsv1alpha1.ConditionPaused, true, dsv1alpha1.ReasonIdle, msg)
	s.note(factFrozen, dsv1alpha1.ReasonIdle, "%s", msg)
	if now {
		r.event(s.sbx, false, EventIdlePaused, "Pause", msg)
	}
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
