package sandbox

import (
	"context"
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
// period × failureThreshold from its start (Docker's start time, so a restarted agent gives no more); a
// check that outlasts its timeout has the container killed by the driver (its exec deadline rule) and so
// fails the service at once.
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
	passed, killed, err := r.probe(ctx, c.Name, rd)
	switch {
	case dd.IsConflict(err) || dd.IsNotFound(err):
		s.after(period) // it stopped meanwhile; its die event brings the next pass, which poisons
		return true, nil
	case err != nil:
		return s.fail(dsv1alpha1.ReasonServiceReadinessFailed, "checking readiness of service "+svc.Name, err)
	case passed:
		return r.markReady(s, svc, st), nil
	case killed:
		st.State, st.Message = dsv1alpha1.ServiceFailed, "its readiness check outlasted its timeout"
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceReadinessFailed, "service %q: a readiness check outlasted its timeout and the service was stopped", svc.Name)
	case !time.Now().Before(first.Add(period * time.Duration(threshold))):
		st.State, st.Message = dsv1alpha1.ServiceFailed, "it never passed readiness"
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceReadinessFailed, "service %q did not pass readiness within %d checks", svc.Name, threshold)
	}
	s.after(period)
	return true, nil
}

func (r *SandboxReconciler) markReady(s *scope, svc *dsv1alpha1.SandboxService, st *dsv1alpha1.ServiceInstanceStatus) bool {
	st.State, st.Message = dsv1alpha1.ServiceReady, ""
	r.event(s.sbx, false, EventServiceReady, "Check", "service %s is ready", svc.Name)
	return false
}

// checkLiveness keeps checking a ready service every period; failureThreshold failures in a row poison the
// topology. A frozen (paused) service is not checked. Only services that declare readiness cause these
// periodic passes; nothing else about an idle Sandbox is polled.
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
	passed, killed, err := r.probe(ctx, c.Name, rd)
	if err != nil && !dd.IsConflict(err) && !dd.IsNotFound(err) {
		return s.fail(dsv1alpha1.ReasonServiceUnhealthy, "checking readiness of service "+svc.Name, err)
	}
	failures := r.probes.record(s.key(), c.Name, passed, period)
	if killed || failures >= threshold {
		st.State, st.Message = dsv1alpha1.ServiceFailed, "it failed readiness after being ready"
		return r.poison(ctx, s, dsv1alpha1.ReasonServiceUnhealthy, "service %q failed readiness %d times in a row", svc.Name, max(failures, 1))
	}
	s.after(period)
	return false, nil
}

// probeEnv clears the egress proxy variables for readiness commands: a probe checks its own container, and
// some clients (busybox wget) ignore NO_PROXY and would ask the proxy for 127.0.0.1.
var probeEnv = []dd.EnvVar{{Name: "HTTP_PROXY"}, {Name: "http_proxy"}, {Name: "HTTPS_PROXY"}, {Name: "https_proxy"}}

// probe runs a readiness command once; only its exit code counts.
func (r *SandboxReconciler) probe(ctx context.Context, container string, rd *dsv1alpha1.Readiness) (passed, killed bool, err error) {
	res, err := r.Driver.Exec(ctx, container, dd.ExecRequest{
		Command: rd.Command, Env: probeEnv, Timeout: seconds(rd.TimeoutSeconds, defaultTimeout), OutputLimit: r.Options.ProbeLimit,
	})
	if err != nil {
		return false, false, err
	}
	return res.Reason == dd.ExecCompleted && res.ExitCode == 0, res.ContainerKilled, nil
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
