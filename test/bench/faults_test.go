package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/dockside-dev/dockside/test/internal/controlprocs"
)

// The soak's faults (issue 30): after a random pause, one of three, drawn at random (seeded).
const (
	soakFaultMin = 5 * time.Second
	soakFaultMax = 25 * time.Second
	// Of every 10 faults, on average, soakAgentKillsIn10 SIGKILL the agent, which is started again at once;
	// soakFreezesIn10 freeze kube-apiserver (SIGSTOP) for soakFreezeMin to soakFreezeMax, as a control plane
	// that hangs, then let it go on (SIGCONT); the rest SIGKILL kube-apiserver and start it again with the same
	// arguments, as a crash and its supervisor would, the next fault waiting until it answers /readyz.
	soakAgentKillsIn10 = 7
	soakFreezesIn10    = 2
	soakFreezeMin      = 5 * time.Second
	soakFreezeMax      = 30 * time.Second
	// soakAPIReadyLimit bounds how long a restarted kube-apiserver may take to answer /readyz.
	soakAPIReadyLimit = 3 * time.Minute
)

// faultKind names a fault in figures and failure messages.
type faultKind string

const (
	agentKill  faultKind = "agent SIGKILLed and restarted"
	apiFreeze  faultKind = "kube-apiserver frozen"
	apiRestart faultKind = "kube-apiserver SIGKILLed and restarted"
)

// fault is one fault injected: when it began and how long its component was out (until the agent's metrics
// or kube-apiserver's /readyz answered again; a freeze's length).
type fault struct {
	kind faultKind
	at   time.Time
	out  time.Duration
}

func (f fault) String() string {
	return fmt.Sprintf("%s %s (out %s)", f.at.Format(time.TimeOnly), f.kind, f.out.Round(time.Millisecond))
}

// faultInjector injects faults into an env's agent and kube-apiserver until stopped. Only its goroutine
// touches the agent, the API server and its own fields until stop returns.
type faultInjector struct {
	e      *env
	api    *apiGate
	logDir string
	quit   chan struct{}
	ended  chan struct{}
	faults []fault
	// countersAtRestarts are kube-apiserver's metrics just before each of its restarts, which zero them.
	countersAtRestarts []metrics
	errs               []error
}

// startFaults starts injecting faults into e, drawn from seed; api is closed while kube-apiserver is down
// for a restart, and the restarted one logs into logDir.
func startFaults(e *env, api *apiGate, logDir string, seed int64) *faultInjector {
	f := &faultInjector{e: e, api: api, logDir: logDir, quit: make(chan struct{}), ended: make(chan struct{})}
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	go func() {
		defer close(f.ended)
		for {
			select {
			case <-f.quit:
				return
			case <-time.After(between(rng, soakFaultMin, soakFaultMax)):
			}
			if err := f.inject(rng); err != nil {
				f.errs = append(f.errs, err)
				return // the env is not what the soak needs any more: the cycles' limits end it
			}
		}
	}()
	return f
}

// between is a random duration in [low, high).
func between(rng *rand.Rand, low, high time.Duration) time.Duration {
	return low + time.Duration(rng.Int64N(int64(high-low)))
}

// inject draws one fault and injects it; an error means it could not be undone.
func (f *faultInjector) inject(rng *rand.Rand) error {
	f.checkAgent()
	at := time.Now()
	var kind faultKind
	var err error
	switch n := rng.IntN(10); {
	case n < soakAgentKillsIn10:
		kind, err = agentKill, f.killAgent()
	case n < soakAgentKillsIn10+soakFreezesIn10:
		kind, err = apiFreeze, f.freezeAPIServer(between(rng, soakFreezeMin, soakFreezeMax))
	default:
		kind, err = apiRestart, f.restartAPIServer()
	}
	f.faults = append(f.faults, fault{kind: kind, at: at, out: time.Since(at)})
	if err != nil {
		return fmt.Errorf("fault %d (%s): %w", len(f.faults), kind, err)
	}
	return nil
}

// checkAgent notes an agent that exited by itself, which it must not do whatever the API server does (issue
// 30), and starts it again so that the soak goes on.
func (f *faultInjector) checkAgent() {
	exited, exitErr := f.e.agent.Exited()
	if !exited {
		return
	}
	err := errors.Join(fmt.Errorf("the agent exited by itself, %s", sinceFault(f.faults, time.Now())), exitErr)
	if restartErr := f.e.agent.restart(context.Background()); restartErr != nil {
		err = errors.Join(err, restartErr)
	}
	f.errs = append(f.errs, err)
}

// killAgent SIGKILLs the agent and starts it again at once with the same arguments.
func (f *faultInjector) killAgent() error {
	f.e.agent.Kill()
	return f.e.agent.restart(context.Background())
}

// freezeAPIServer stops kube-apiserver for d, or until the injector is stopped, and lets it go on.
func (f *faultInjector) freezeAPIServer(d time.Duration) error {
	pid, err := controlprocs.APIServer(f.e.cfg.Host)
	if err != nil {
		return err
	}
	thaw, err := controlprocs.Freeze(pid)
	if err != nil {
		return err
	}
	select {
	case <-f.quit:
	case <-time.After(d):
	}
	return thaw()
}

// restartAPIServer SIGKILLs kube-apiserver, starts it again with the same arguments and waits until it
// answers /readyz. The restarted process is the env's to stop before its control plane (env.stop).
func (f *faultInjector) restartAPIServer() error {
	counters, err := apiServerMetrics(context.Background(), f.e.cfg)
	if err != nil {
		return fmt.Errorf("scraping kube-apiserver before its restart: %w", err)
	}
	f.countersAtRestarts = append(f.countersAtRestarts, counters)
	pid, err := controlprocs.APIServer(f.e.cfg.Host)
	if err != nil {
		return err
	}
	f.api.down()
	defer f.api.back()
	stopped, err := controlprocs.Kill(pid)
	if err != nil {
		return err
	}
	return f.startAPIServer(stopped, time.Now().Add(soakAPIReadyLimit))
}

// startAPIServer starts the killed kube-apiserver again until it answers /readyz, or the deadline passes. A
// start that exits at once is tried again: its port, free since the kill, may be held for a while by
// another process's connection (one of the many on a shared machine, in TIME_WAIT), and the bind fails.
func (f *faultInjector) startAPIServer(stopped *controlprocs.Stopped, deadline time.Time) error {
	for {
		p, err := stopped.Start(filepath.Join(f.logDir, "kube-apiserver.log"))
		if err != nil {
			return err
		}
		f.e.apiServer = p
		if err := waitAPIReady(f.e.cfg, p, deadline); err == nil || !p.Exited() || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// waitAPIReady waits until kube-apiserver p answers /readyz with ok (it serves every API again, the
// CustomResourceDefinitions included), exits, or the deadline passes.
func waitAPIReady(cfg *rest.Config, p *controlprocs.Process, deadline time.Time) error {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	hc.Timeout = 5 * time.Second
	url := strings.TrimSuffix(cfg.Host, "/") + "/readyz"
	for ; ; time.Sleep(500 * time.Millisecond) {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET /readyz: %s", resp.Status)
		}
		if p.Exited() {
			return fmt.Errorf("kube-apiserver exited at its start (see its log): %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within %s of its restart: %w", soakAPIReadyLimit, err)
		}
	}
}

// stop stops injecting, once the fault under way is undone, with the agent running (unless it could not be
// started again), and returns the faults and what went wrong.
func (f *faultInjector) stop() ([]fault, error) {
	close(f.quit)
	<-f.ended
	f.checkAgent()
	return f.faults, errors.Join(f.errs...)
}

// count is how many faults of kind were injected, and how long their components were out in all and at most.
func count(faults []fault, kind faultKind) (n int, total, most time.Duration) {
	for _, f := range faults {
		if f.kind == kind {
			n, total, most = n+1, total+f.out, max(most, f.out)
		}
	}
	return n, total, most
}

// sinceFault places a moment against the last fault that began before it.
func sinceFault(faults []fault, at time.Time) string {
	i, _ := slices.BinarySearchFunc(faults, at, func(f fault, at time.Time) int { return f.at.Compare(at) })
	if i == 0 {
		return "before any fault"
	}
	last := faults[i-1]
	return fmt.Sprintf("%s after fault %d of %d (%s, out %s)", at.Sub(last.at).Round(time.Millisecond), i, len(faults),
		last.kind, last.out.Round(time.Millisecond))
}

// apiWrites counts the API server's write requests over a run with restarts (see writes): each restart zeroes
// the counters, so each life of the server adds its own, the first's from before.
func apiWrites(before, after metrics, atRestarts []metrics, group string) float64 {
	n := writes(after, group) - writes(before, group)
	for _, m := range atRestarts {
		n += writes(m, group)
	}
	return n
}
