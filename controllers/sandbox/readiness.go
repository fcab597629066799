package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
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
// period later, and the service fails once the time it was given has passed.
func (r *SandboxReconciler) checkReadiness(ctx context.Context, s *scope, svc *dsv1alpha1.SandboxService, c dd.ContainerInfo, st *dsv1alpha1.ServiceInstanceStatus) (bool, error) {
	rd := svc.Spec.Readiness
	if rd == nil {
		return r.markReady(s, svc, st), nil
	}
	period, threshold := seconds(rd.PeriodSeconds, defaultPeriod), failureThreshold(rd)
	first := c.StartedAt.Add(time.Duration(rd.InitialDelaySeconds) * time.Second)
	s.waiting(dsv1alpha1.SandboxStarting, dsv1alpha1.ReasonWaitingForServices, "waiting for service %q to pass readiness", svc.Name)
	if wait := time.Until(first); wait > 0 {
		s.after(wait)
		return true, nil
	}
	failure, err := r.probe(ctx, c.Name, rd)
	switch {
	case dd.IsConflict(err) || dd.IsNotFound(err):
		s.after(period) // it stopped meanwhile; its die event brings the next pass, which poisons
		return true, nil
	case err != nil:
		return s.fail(dsv1alpha1.ReasonServiceReadinessFailed, "checking readiness of service "+svc.Name, err)
	case failure == "":
		return r.markReady(s, svc, st), nil
	case !time.Now().Before(first.Add(period * time.Duration(threshold))):
		st.State, st.Message = dsv1alpha1.ServiceFailed, "it never passed readiness; its last check "+failure
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceReadinessFailed, "service %q did not pass readiness within %d checks; the last one %s", svc.Name, threshold, failure)
	}
	st.Message = "its last readiness check " + failure
	s.waiting(dsv1alpha1.SandboxStarting, dsv1alpha1.ReasonWaitingForServices, "waiting for service %q to pass readiness; its last check %s", svc.Name, failure)
	s.after(period)
	return true, nil
}

func (r *SandboxReconciler) markReady(s *scope, svc *dsv1alpha1.SandboxService, st *dsv1alpha1.ServiceInstanceStatus) bool {
	st.State, st.Message = dsv1alpha1.ServiceReady, ""
	r.event(s.sbx, false, EventServiceReady, "Check", "service %s is ready", svc.Name)
	return false
}

// checkLiveness keeps checking a ready service every period, as Kubernetes does: a check fails by its exit
// code or by outlasting its timeout, a success resets the count, and only failureThreshold failures in a
// row poison the topology (a failed service is never repaired, docs/architecture.md "Poisoning and
// settling"). A check never stops the service itself. A frozen (paused) service is not checked. Only
// services that declare readiness cause these periodic passes; nothing else about an idle Sandbox is polled.
func (r *SandboxReconciler) checkLiveness(ctx context.Context, s *scope, svc *dsv1alpha1.SandboxService, c dd.ContainerInfo, st *dsv1alpha1.ServiceInstanceStatus) (bool, error) {
	rd := svc.Spec.Readiness
	if rd == nil || c.State != dd.StateRunning {
		return false, nil
	}
	period, threshold := seconds(rd.PeriodSeconds, defaultPeriod), failureThreshold(rd)
	if wait := r.probes.wait(s.key(), c.Name); wait > 0 {
		s.after(wait)
		return false, nil
	}
	failure, err := r.probe(ctx, c.Name, rd)
	switch {
	case dd.IsConflict(err) || dd.IsNotFound(err):
		s.after(period) // it stopped or froze meanwhile, which is no failed check; a die event brings the pass that says so
		return false, nil
	case err != nil:
		return s.fail(dsv1alpha1.ReasonServiceUnhealthy, "checking readiness of service "+svc.Name, err)
	}
	failures := r.probes.record(s.key(), c.Name, failure == "", period)
	switch {
	case failure == "":
		st.Message = ""
	case failures >= threshold:
		st.State, st.Message = dsv1alpha1.ServiceFailed, fmt.Sprintf("it failed readiness %d of %d times in a row after being ready; the last check %s", failures, threshold, failure)
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceUnhealthy, "service %q failed readiness %d of %d times in a row; the last check %s", svc.Name, failures, threshold, failure)
	default:
		st.Message = fmt.Sprintf("its last readiness check %s: %d of %d failures in a row", failure, failures, threshold)
	}
	s.after(period)
	return false, nil
}

// probeEnv clears the egress proxy variables for readiness commands: a probe checks its own container, and
// some clients (busybox wget) ignore NO_PROXY and would ask the proxy for 127.0.0.1.
var probeEnv = []dd.EnvVar{{Name: "HTTP_PROXY"}, {Name: "http_proxy"}, {Name: "HTTPS_PROXY"}, {Name: "https_proxy"}}

// probe runs a readiness command once and says how it failed ("timed out after 1s", "exited with code 2"),
// or "" when it passed. It keeps the container at its timeout (dd.ExecRequest.KeepOnTimeout): a check that
// is slow once, as on a loaded node, is one failed check, never a killed service.
func (r *SandboxReconciler) probe(ctx context.Context, container string, rd *dsv1alpha1.Readiness) (string, error) {
	timeout := seconds(rd.TimeoutSeconds, defaultTimeout)
	res, err := r.Driver.Exec(ctx, container, dd.ExecRequest{
		Command: rd.Command, Env: probeEnv, Timeout: timeout, OutputLimit: r.Options.ProbeLimit, KeepOnTimeout: true,
	})
	switch {
	case err != nil:
		return "", err
	case res.Reason == dd.ExecCanceled: // the pass was cancelled (the agent stops): no check happened
		return "", errors.New("the readiness check was cancelled")
	case res.Reason == dd.ExecDeadlineExceeded:
		return fmt.Sprintf("timed out after %gs", timeout.Seconds()), nil
	case res.ExitCode != 0:
		return fmt.Sprintf("exited with code %d", res.ExitCode), nil
	}
	return "", nil
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

// probeTracker remembers, per Sandbox, the consecutive readiness failures of its ready services and when
// each is due for its next check. It is the agent's only memory between passes, and losing it on a restart
// costs at most a few extra checks.
type probeTracker struct {
	mu    sync.Mutex
	state map[types.NamespacedName]map[string]*probeState
}

type probeState struct {
	failures int
	next     time.Time
}

// wait is how long until the container's next check is due; 0 when due now.
func (p *probeTracker) wait(owner types.NamespacedName, container string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st, ok := p.state[owner][container]; ok {
		return max(time.Until(st.next), 0)
	}
	return 0
}

// record notes a check's result and returns the failures in a row so far.
func (p *probeTracker) record(owner types.NamespacedName, container string, passed bool, period time.Duration) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		p.state = map[types.NamespacedName]map[string]*probeState{}
	}
	if p.state[owner] == nil {
		p.state[owner] = map[string]*probeState{}
	}
	st := p.state[owner][container]
	if st == nil {
		st = &probeState{}
		p.state[owner][container] = st
	}
	st.next = time.Now().Add(period)
	if passed {
		st.failures = 0
	} else {
		st.failures++
	}
	return st.failures
}

// forget drops what is known about a Sandbox's checks (its topology rolled, or it went).
func (p *probeTracker) forget(owner types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.state, owner)
}
