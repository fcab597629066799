package sandbox

import (
	"context"
	"fmt"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/prober"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// Readiness defaults where the SandboxService left a field out (the CRD defaults them too).
const (
	defaultPeriod    = 2 * time.Second
	defaultTimeout   = time.Second
	defaultThreshold = 3
)

// checkReadiness waits for a starting service to pass its readiness command. It is given initialDelay plus
// period × failureThreshold from its start (Docker's start time, so a restarted agent gives no more). A
// check that fails, by its exit code or by outlasting its timeout, is only that: the next one comes a
// period later, and the service fails once the time it was given has passed. Checks run in the prober, off
// this pass: a pass takes the result of a completed check, or asks for one and waits for its wake.
func (r *Reconciler) checkReadiness(ctx context.Context, s *scope, svc *dsv1alpha1.SandboxService, c dd.ContainerInfo, st *dsv1alpha1.ServiceInstanceStatus) (stop bool, err error) {
	ctx, span := tracing.Start(ctx, "sandbox.service.readiness", tracing.Service(svc.Name))
	defer func() { span.SetAttributes(tracing.Reason(string(st.State))); tracing.End(span, err, "") }()
	rd := svc.Spec.Readiness
	if rd == nil {
		return r.markReady(s, svc, st), nil
	}
	period, threshold := seconds(rd.PeriodSeconds, defaultPeriod), failureThreshold(rd)
	first := c.StartedAt.Add(time.Duration(rd.InitialDelaySeconds) * time.Second)
	s.note(factBuilding, dsv1alpha1.ReasonWaitingForServices, "waiting for service %q to pass readiness", svc.Name)
	if wait := time.Until(first); wait > 0 {
		s.after(wait)
		return true, nil
	}
	res, _, ok := r.probes.Take(s.key(), c.Name, period)
	if !ok {
		if last := r.requestProbe(s, c.Name, rd); last != "" {
			s.note(factBuilding, dsv1alpha1.ReasonWaitingForServices, "waiting for service %q to pass readiness; its last check %s", svc.Name, last)
		}
		return true, nil
	}
	switch {
	case dd.IsConflict(res.Err) || dd.IsNotFound(res.Err):
		s.after(period) // it stopped meanwhile; its die event brings the next pass, which poisons
		return true, nil
	case res.Err != nil:
		return s.fail(dsv1alpha1.ReasonServiceReadinessFailed, "checking readiness of service "+svc.Name, res.Err)
	case res.Failure == "":
		return r.markReady(s, svc, st), nil
	case !time.Now().Before(first.Add(period * time.Duration(threshold))):
		st.State, st.Message = dsv1alpha1.ServiceFailed, "it never passed readiness; its last check "+res.Failure
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceReadinessFailed, "service %q did not pass readiness within %d checks; the last one %s", svc.Name, threshold, res.Failure)
	}
	st.Message = "its last readiness check " + res.Failure
	s.note(factBuilding, dsv1alpha1.ReasonWaitingForServices, "waiting for service %q to pass readiness; its last check %s", svc.Name, res.Failure)
	s.after(period)
	return true, nil
}

func (r *Reconciler) markReady(s *scope, svc *dsv1alpha1.SandboxService, st *dsv1alpha1.ServiceInstanceStatus) bool {
	st.State, st.Message = dsv1alpha1.ServiceReady, ""
	r.event(s.sbx, false, EventServiceReady, "Check", "service %s is ready", svc.Name)
	return false
}

// checkLiveness keeps checking a ready service every period, as Kubernetes does: a check fails by its exit
// code or by outlasting its timeout, a success resets the count, and only failureThreshold failures in a
// row poison the topology (a failed service is never repaired, docs/design/status.md "Poisoning and
// settling"). A check never stops the service itself. A frozen (paused) service is not checked. Only
// services that declare readiness cause these periodic passes; nothing else about an idle Sandbox is polled.
// As in checkReadiness, the pass only takes a completed check's result or asks for the next check.
func (r *Reconciler) checkLiveness(ctx context.Context, s *scope, svc *dsv1alpha1.SandboxService, c dd.ContainerInfo, st *dsv1alpha1.ServiceInstanceStatus) (bool, error) {
	rd := svc.Spec.Readiness
	if rd == nil || c.State != dd.StateRunning {
		return false, nil
	}
	period, threshold := seconds(rd.PeriodSeconds, defaultPeriod), failureThreshold(rd)
	res, failures, ok := r.probes.Take(s.key(), c.Name, period)
	if !ok {
		r.requestProbe(s, c.Name, rd)
		return false, nil
	}
	switch {
	case dd.IsConflict(res.Err) || dd.IsNotFound(res.Err):
		s.after(period) // it stopped or froze meanwhile, which is no failed check; a die event brings the pass that says so
		return false, nil
	case res.Err != nil:
		return s.fail(dsv1alpha1.ReasonServiceUnhealthy, "checking readiness of service "+svc.Name, res.Err)
	case res.Failure == "":
		st.Message = ""
	case failures >= threshold:
		st.State, st.Message = dsv1alpha1.ServiceFailed, fmt.Sprintf("it failed readiness %d of %d times in a row after being ready; the last check %s", failures, threshold, res.Failure)
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceUnhealthy, "service %q failed readiness %d of %d times in a row; the last check %s", svc.Name, failures, threshold, res.Failure)
	default:
		st.Message = fmt.Sprintf("its last readiness check %s: %d of %d failures in a row", res.Failure, failures, threshold)
	}
	s.after(period)
	return false, nil
}

// requestProbe has the prober check the container when a check is due, and asks for a pass when the next
// one will be. A check that runs wakes the Sandbox when it completes, so no pass is asked for meanwhile: a
// check hanging to its timeout costs no passes. It returns how the last check failed; "" if it passed.
func (r *Reconciler) requestProbe(s *scope, container string, rd *dsv1alpha1.Readiness) string {
	key := s.key()
	wait, last := r.probes.Request(r.Wake.Context(), key, container, r.Options.ProbeConcurrency,
		func(ctx context.Context) prober.Result { return r.probe(ctx, container, rd) },
		func() { r.Wake.Now(key) })
	if wait > 0 {
		s.after(wait)
	}
	return last
}

// probeEnv clears the egress proxy variables for readiness commands: a probe checks its own container, and
// some clients (busybox wget) ignore NO_PROXY and would ask the proxy for 127.0.0.1.
var probeEnv = []dd.EnvVar{{Name: "HTTP_PROXY"}, {Name: "http_proxy"}, {Name: "HTTPS_PROXY"}, {Name: "https_proxy"}}

// probe runs a readiness command once and says how it failed ("timed out after 1s", "exited with code 2"),
// or "" when it passed. It keeps the container at its timeout (dd.ExecRequest.KeepOnTimeout): a check that
// is slow once, as on a loaded node, is one failed check, never a killed service. The timeout also bounds
// how long the check holds its slot in the prober.
func (r *Reconciler) probe(ctx context.Context, container string, rd *dsv1alpha1.Readiness) prober.Result {
	timeout := seconds(rd.TimeoutSeconds, defaultTimeout)
	res, err := r.Driver.Exec(ctx, container, dd.ExecRequest{
		Command: rd.Command, Env: probeEnv, Timeout: timeout, OutputLimit: r.Options.ProbeLimit, KeepOnTimeout: true,
	})
	switch {
	case err != nil:
		return prober.Result{Err: err}
	case res.Reason == dd.ExecCanceled: // the Sandbox was forgotten or the agent stops: no check happened
		return prober.Result{Err: prober.ErrCancelled}
	case res.Reason == dd.ExecDeadlineExceeded:
		return prober.Result{Failure: fmt.Sprintf("timed out after %gs", timeout.Seconds())}
	case res.ExitCode != 0:
		return prober.Result{Failure: fmt.Sprintf("exited with code %d", res.ExitCode)}
	}
	return prober.Result{}
}

func failureThreshold(rd *dsv1alpha1.Readiness) int {
	if rd.FailureThreshold <= 0 {
		return defaultThreshold
	}
	return int(rd.FailureThreshold)
}

func seconds(n int32, fallback time.Duration) time.Duration {
	if n <= 0 {
		return fallback
	}
	return time.Duration(n) * time.Second
}
