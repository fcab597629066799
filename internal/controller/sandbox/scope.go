package sandbox

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// scope is what one pass over a bound Sandbox has learnt and where it has got to.
type scope struct {
	sbx *dsv1alpha1.Sandbox

	services []*dsv1alpha1.SandboxService // spec.services in order; nil where the SandboxService does not exist
	missing  string                       // the first service named in spec that does not exist
	resolved bool                         // services and hash were read this pass
	hash     string                       // topology.Hash of the spec as it is now

	containers map[string]dd.ContainerInfo // the Sandbox's containers (any generation), by Docker name
	networks   map[string]dd.NetworkInfo   // its own networks (any generation), by Docker name
	attachment dd.NetworkAttachment        // what the primary joins
	proxy      string                      // the egress proxy's URL for an Isolated topology, else ""

	finding         finding       // what the pass found, from which its phase is derived (phase.go)
	recheck         time.Duration // soonest time-based recheck asked for by a step; 0 for none
	startupDeadline time.Time     // when the start going on must be done by; zero when none is
}

// step is one part of converging a Sandbox. It returns stop when the pass ends with it (waiting, settled
// or failed), having noted what it found.
type step func(ctx context.Context, s *scope) (stop bool, err error)

func newScope(sbx *dsv1alpha1.Sandbox) *scope {
	s := &scope{sbx: sbx}
	s.note(factBuilding, dsv1alpha1.ReasonCreating, "building the topology")
	return s
}

func (s *scope) key() types.NamespacedName {
	return types.NamespacedName{Namespace: s.sbx.Namespace, Name: s.sbx.Name}
}

func (s *scope) gen() int64 { return s.sbx.Status.TopologyGeneration }

func (s *scope) names() topology.Names { return topology.NamesOf(s.sbx) }
func (s *scope) primaryName() string   { return s.names().Primary() }
func (s *scope) networkName() string   { return s.names().Network() }
func (s *scope) holderName() string    { return s.names().Holder() }
func (s *scope) volumeName() string    { return s.names().Workspace() }
func (s *scope) serviceName(service string) string {
	return s.names().Service(service)
}

func (s *scope) isRun() bool { return len(s.sbx.Spec.Command) > 0 }

// after asks for another pass in d at the latest.
func (s *scope) after(d time.Duration) {
	d = max(d, 10*time.Millisecond)
	if s.recheck == 0 || d < s.recheck {
		s.recheck = d
	}
}

// note records what the pass found; the last note of a pass decides its phase (derivePhase).
func (s *scope) note(f fact, reason, format string, args ...any) {
	s.finding = found(f, reason, format, args...)
}

// phase is the phase and summary derived from what the pass found so far.
func (s *scope) phase() (dsv1alpha1.SandboxPhase, status.Summary) {
	return derivePhase(observedOf(s.sbx, s.finding))
}

// fail ends the pass on an error while doing something. A spec Docker can never run is terminal (Stalled,
// no retry); anything else is retried with backoff. Driver errors carry only the driver's own words, so they
// may be shown; other errors (API server) are not, as they can carry conflict noise.
func (s *scope) fail(reason, doing string, err error) (bool, error) {
	var derr *dd.Error
	if !errors.As(err, &derr) {
		s.note(factRetrying, reason, "%s failed; retrying", doing)
		return true, err
	}
	switch derr.Kind {
	case dd.KindInvalidSpec:
		s.note(factFailed, reason, "%s failed: %v", doing, derr)
		return true, nil
	case dd.KindUnavailable:
		reason = dsv1alpha1.ReasonDockerUnavailable
	}
	s.note(factRetrying, reason, "%s failed: %v; retrying", doing, derr)
	return true, err
}
