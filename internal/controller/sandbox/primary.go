package sandbox

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// ensurePrimary creates and starts the primary once every service is ready, and enforces
// activeDeadlineSeconds from the host by killing it. A primary that ran is never started again: only a
// created one is started.
func (r *Reconciler) ensurePrimary(ctx context.Context, s *scope) (bool, error) {
	st := &s.sbx.Status
	c := s.containers[s.primaryName()]
	if !c.Exists {
		if stop, err := r.ensureRunVolume(ctx, s); stop || err != nil {
			return stop, err
		}
		info, stop, err := r.create(ctx, s, r.primarySpec(s), s.sbx.Spec.Env, dsv1alpha1.ReasonStartFailed, "the primary container")
		if stop || err != nil {
			return stop, err
		}
		c = info
	}
	st.ContainerID = c.ID
	if c.State == dd.StateCreated {
		if err := r.Driver.StartContainer(ctx, c.Name); err != nil {
			return s.fail(dsv1alpha1.ReasonStartFailed, "starting the primary container", err)
		}
		c.State, c.StartedAt = dd.StateRunning, time.Now()
		r.event(s.sbx, false, EventStarted, "Start", "primary container started")
		if !s.containers[s.holderName()].Exists {
			s.after(0) // its holder comes next (ensureWorkspace), right after this pass reports the start
		}
	}
	s.containers[c.Name] = c
	if st.StartTime == nil {
		st.StartTime = &metav1.Time{Time: c.StartedAt}
	}
	if stop, err := r.enforceDeadline(ctx, s, c); stop || err != nil {
		return stop, err
	}
	if s.isRun() {
		s.note(factPrimaryRunning, dsv1alpha1.ReasonRunning, "the command is running")
	} else {
		s.note(factPrimaryRunning, dsv1alpha1.ReasonRunning, "the primary container is running")
	}
	return false, nil
}

// primaryEnded records how a primary that ran stopped: a run finishes; a session ends at its deadline or,
// stopping any other way, poisons its topology.
func (r *Reconciler) primaryEnded(ctx context.Context, s *scope, c dd.ContainerInfo) (bool, error) {
	if s.isRun() {
		return r.finishRun(ctx, s, c)
	}
	if r.Commands != nil && r.Commands.Running(s.sbx.UID) {
		// The run of an Execution killed it (deadline, cancel) or will find it gone; it poisons the topology
		// with the reason why, which this Sandbox's next pass reads back.
		s.note(factAwaitingExecution, dsv1alpha1.ReasonRunning, "the primary container stopped while an Execution ran; waiting for its outcome")
		s.after(status.StaleRetry)
		return true, nil
	}
	if at, ok := deadline(s, c); ok && !c.FinishedAt.Before(at) {
		s.sbx.Status.FinishTime = &metav1.Time{Time: c.FinishedAt}
		s.note(factFailed, dsv1alpha1.ReasonDeadlineExceeded, sessionDeadlineMessage)
		return true, nil
	}
	return r.poison(ctx, s, dsv1alpha1.ReasonPrimaryExited, "the primary container stopped with exit code %d", c.ExitCode)
}

// deadline is when activeDeadlineSeconds runs out for the primary c, counted from its start.
func deadline(s *scope, c dd.ContainerInfo) (time.Time, bool) {
	d := s.sbx.Spec.ActiveDeadlineSeconds
	if d == nil || c.StartedAt.IsZero() {
		return time.Time{}, false
	}
	return c.StartedAt.Add(time.Duration(*d) * time.Second), true
}

// enforceDeadline asks for a pass when the deadline comes, and at it kills the primary and settles it.
func (r *Reconciler) enforceDeadline(ctx context.Context, s *scope, c dd.ContainerInfo) (bool, error) {
	at, ok := deadline(s, c)
	if !ok {
		return false, nil
	}
	if left := time.Until(at); left > 0 {
		s.after(left)
		return false, nil
	}
	if err := r.Driver.StopContainer(ctx, c.Name, 0); err != nil {
		return s.fail(dsv1alpha1.ReasonDeadlineExceeded, "killing the primary container at its deadline", err)
	}
	r.event(s.sbx, true, EventDeadlineExceeded, "Kill", "activeDeadlineSeconds (%d) reached: the primary container was killed", *s.sbx.Spec.ActiveDeadlineSeconds)
	killed, err := r.Driver.ObserveContainer(ctx, c.Name)
	if err != nil {
		return s.fail(dsv1alpha1.ReasonDockerUnavailable, "observing the primary container", err)
	}
	s.containers[c.Name] = killed
	if !topology.Ended(killed) {
		s.after(status.StaleRetry)
		return true, nil
	}
	return r.primaryEnded(ctx, s, killed)
}
