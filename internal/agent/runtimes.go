package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/controller/nodelifecycle"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// nodeRuntimes asks the daemon at the agent's start which OCI runtimes it offers, and refuses a
// --default-runtime it cannot run (docs/deploy.md, "Running Sandboxes under gVisor"); runtimesWatch reads it
// again while the agent runs.
func nodeRuntimes(ctx context.Context, driver dd.Driver, opts Options, log logr.Logger) (runtimes.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.DockerTimeout)
	defer cancel()
	listed, err := driver.Runtimes(ctx)
	if err != nil {
		return runtimes.Node{}, fmt.Errorf("asking the Docker daemon for its runtimes: %w", err)
	}
	node, err := runtimes.Discover(listed, opts.GVisorRuntimeName, opts.DefaultRuntime)
	if err != nil {
		return runtimes.Node{}, fmt.Errorf("--default-runtime: %w", err)
	}
	log.Info("Runtimes this node offers Sandboxes", "offered", node.AnnotationValue(), "default", node.Default, "dockerRuntimes", strings.Join(listed, ","))
	return node, nil
}

// runtimesWatch reads the daemon's runtimes again every period, and at once when the Docker event stream
// reconnects (the daemon restarted or was reloaded), so that an operator who registers runsc in daemon.json,
// or removes it, is seen without restarting the agent. When what the node offers changes, the unbound
// Sandboxes are looked at again at once: those waiting for a runtime it now offers are bound here. A runtime
// that goes takes nothing already running under it down; only new containers are refused it.
type runtimesWatch struct {
	driver   dd.Driver
	live     *runtimes.Live
	opts     Options
	unbound  client.Reader // the cache of unbound Sandboxes
	requeues chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox]
	kick     chan struct{}
	log      logr.Logger
}

func newRuntimesWatch(w runtimesWatch) *runtimesWatch {
	w.kick = make(chan struct{}, 1)
	return &w
}

// NeedLeaderElection: what it reads serves the reconcilers, which run only in the Lease holder.
func (w *runtimesWatch) NeedLeaderElection() bool { return true }

// Kick asks for a read now (the event stream reconnected); it never blocks.
func (w *runtimesWatch) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *runtimesWatch) Start(ctx context.Context) error {
	tick := time.NewTicker(w.opts.RuntimesPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-w.kick:
		}
		w.reread(ctx)
	}
}

func (w *runtimesWatch) reread(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, w.opts.DockerTimeout)
	listed, err := w.driver.Runtimes(rctx)
	cancel()
	if err != nil {
		// The daemon is away: its return reconnects the event stream, which kicks a read.
		w.log.V(1).Info("Reading the Docker daemon's runtimes failed; keeping the last read", "error", err.Error())
		return
	}
	node := runtimes.Reread(listed, w.opts.GVisorRuntimeName, w.opts.DefaultRuntime)
	if !w.live.Set(node) {
		return
	}
	w.log.Info("The runtimes this node offers Sandboxes changed; containers already running keep theirs",
		"offered", node.AnnotationValue(), "default", node.Default, "dockerRuntimes", strings.Join(listed, ","))
	if !node.Offers(node.Default) {
		w.log.Error(nil, "The Docker daemon no longer offers the node's default runtime: Sandboxes that name none wait until it does",
			"default", node.Default, "gvisorRuntimeName", w.opts.GVisorRuntimeName)
	}
	var unbound dsv1alpha1.SandboxList
	if err := w.unbound.List(ctx, &unbound); err != nil {
		w.log.Info("Listing the unbound Sandboxes to look at them again failed; they come back with their retry", "error", err.Error())
		return
	}
	for i := range unbound.Items {
		handoff.Requeue(ctx, w.requeues, unbound.Items[i].Namespace, unbound.Items[i].Name)
	}
}

// runtimesAdvert publishes the node's runtimes on its Lease (runtimes.Annotation) once the agent holds the
// Lease, and again whenever runtimesWatch finds them changed, retrying each until it is written: the agents
// of other nodes read it to know whether anyone can run a Sandbox's runtime. The merge patch touches the
// annotation alone, which the leader election's updates keep.
type runtimesAdvert struct {
	client           client.Client
	namespace, lease string
	live             *runtimes.Live
	log              logr.Logger
}

// NeedLeaderElection: only the holder of the Lease writes on it.
func (a *runtimesAdvert) NeedLeaderElection() bool { return true }

func (a *runtimesAdvert) Start(ctx context.Context) error {
	for {
		node, changed := a.live.Current()
		if err := a.publish(ctx, node.AnnotationValue()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

func (a *runtimesAdvert) publish(ctx context.Context, value string) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.lease}}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, runtimes.Annotation, value))
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 1 << 30, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := a.client.Patch(ctx, lease, patch); err != nil {
			a.log.Info("Publishing the node's runtimes on its Lease failed; retrying", "error", err.Error())
			return false, nil
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("publishing the node's runtimes on Lease %s/%s: %w", a.namespace, a.lease, err)
	}
	return nil
}

// offeredElsewhere reads the Leases of the other nodes' agents (the manager's cache holds them with leader
// election) for one renewed within lostAfter whose runtimes annotation lists rt.
func offeredElsewhere(reader client.Reader, namespace, self string, lostAfter time.Duration) func(context.Context, dsv1alpha1.Runtime) (bool, error) {
	return func(ctx context.Context, rt dsv1alpha1.Runtime) (bool, error) {
		var leases coordinationv1.LeaseList
		if err := reader.List(ctx, &leases, client.InNamespace(namespace)); err != nil {
			return false, fmt.Errorf("listing the agents' Leases for their runtimes: %w", err)
		}
		for i := range leases.Items {
			l := &leases.Items[i]
			node, ok := strings.CutPrefix(l.Name, nodelifecycle.LeasePrefix)
			if !ok || node == self || l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > lostAfter {
				continue
			}
			if runtimes.Listed(l.Annotations[runtimes.Annotation], rt) {
				return true, nil
			}
		}
		return false, nil
	}
}
