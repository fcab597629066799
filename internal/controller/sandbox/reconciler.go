// Package sandbox holds the Sandbox reconciler: it binds unbound Sandboxes to its node while the node has
// room and converges the Sandboxes bound there onto the node's Docker daemon, through dockerdriver only. It is
// the one writer of Sandbox status. What other reconcilers hand it (poisonings, holds, running commands) comes
// through internal/handoff; the Docker names it builds by are internal/topology's (docs/design/layout.md).
package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/checkpointregistry"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/imagepuller"
	"github.com/dockside-dev/dockside/internal/jobs"
	"github.com/dockside-dev/dockside/internal/prober"
	"github.com/dockside-dev/dockside/internal/runtimes"
	"github.com/dockside-dev/dockside/internal/status"
)

// Options are the node's policy and the agent's timing.
type Options struct {
	Node          string // this agent's node name
	Capacity      int    // most Sandboxes this node holds (finished runs too, until deleted); at least 1
	RequireDigest bool   // refuse images that are not pinned by digest (name@sha256:...)
	// MaxImageBytes caps one image's unpacked size on the node; 0: no cap (docs/images.md, "How large an
	// image may be"). The puller enforces it on what it pulls; the reconciler on images found on the node.
	MaxImageBytes int64
	HolderImage   string // image of the container that keeps a workspace alive (docs/design/docker-mapping.md, "Why the holder exists")
	AllowRoot     bool   // run containers as root where a Sandbox or SandboxService asks (runAsRoot)

	// RefuseUnrestricted fails Sandboxes of network mode Unrestricted (reason UnrestrictedNotAllowed).
	RefuseUnrestricted bool

	// Runtimes are the OCI runtimes the node's Docker offers and its default (runtime.go), as the agent last
	// read them from its daemon; nil offers runc alone.
	Runtimes *runtimes.Live

	// Allocatable is what the footprints of the Sandboxes this node holds add up to at most: bytes of memory
	// (their memory limits and workspaces), pids and CPU limits (see footprint.go); a kind left at 0 is not
	// counted. PerContainer is the most pids and CPU one container may ask for.
	Allocatable, PerContainer Holding

	// EgressProxyPort is the port of the egress proxy on the gateways of Isolated bridges (docs/egress.md).
	EgressProxyPort int

	// Storage is the node's Docker storage driver, which decides whether a writable root file system can
	// be capped (rootFilesystem Writable).
	Storage dd.StorageInfo
	// Init runs primaries under the daemon's init, which reaps orphans; the agent sets it when the daemon has
	// one (docs/design/decisions/0027-primaries-run-under-an-init.md).
	Init bool

	BindRetry  time.Duration // how soon an agent without room looks again at a waiting Sandbox
	SpecRetry  time.Duration // how soon a Sandbox waiting for something unwatched (image, Secret) looks again
	StopGrace  time.Duration // grace given to containers stopped because their topology ended
	ProbeLimit int           // bytes kept of a readiness check's output (only its exit code matters)

	// ProbeConcurrency is the most readiness checks run at once on the node, off the reconcile workers;
	// 0 means 8. Checks beyond it wait for their turn.
	ProbeConcurrency int
	// RestoreConcurrency is the most restores from Checkpoints run at once on the node, off the reconcile
	// workers; 0 means 2. Restores beyond it wait for their turn, within their startup deadline.
	RestoreConcurrency int
}

// Reconciler converges Sandboxes onto Docker. Client reads Sandboxes bound to this node from the
// manager's cache; Unbound, a second cache, holds those bound to no node; APIReader reads past the caches
// where a stale read would do harm (capacity, roll decisions, orphans) or where caching would copy every
// Secret into memory. Requeues are passes asked for by Docker events, the sweeper and wakeups.
type Reconciler struct {
	client.Client
	APIReader client.Reader
	Unbound   cache.Cache
	Requeues  <-chan event.TypedGenericEvent[*dsv1alpha1.Sandbox]
	Driver    dd.Driver
	Recorder  events.EventRecorder
	Options   Options
	Archives  *archive.Store               // the node's Checkpoint archives, for restoreFrom; nil: restores are refused
	Registry  *checkpointregistry.Registry // where Checkpoints of other nodes are pulled from; nil: none
	Freezes   *handoff.Freezes             // Sandboxes a capture holds frozen, whose lifecycle is left alone meanwhile
	Commands  handoff.Commands             // Executions' commands running in Sandboxes, whose outcome says why a primary stopped
	Verdicts  *handoff.Verdicts            // poisonings decided by Executions' runs, which this reconciler writes
	Idle      *handoff.Idle                // sessions' use, by which idle ones are frozen (spec.idlePauseSeconds); nil: none is

	// Subnets gives topology networks their subnets; nil lets Docker's default pools choose.
	Subnets *TopologySubnets
	// Egress serves the egress proxy on Isolated bridges; nil serves none (Isolated Sandboxes then reach
	// nothing outside: their bridges do not route out).
	Egress EgressGateways

	// OfferedElsewhere tells whether another agent offers a runtime this node's Docker does not; nil: none
	// is known to (the agent runs without leader election, so no Lease says).
	OfferedElsewhere OfferedElsewhere

	Images *imagepuller.Puller // pulls images in the background for the Sandboxes waiting on them; required
	Wake   *handoff.Wakeups    // passes at startup deadlines, past any error backoff; required

	admission sync.Mutex                          // one room check and reservation at a time, so that concurrent passes never overfill the node
	recent    map[types.UID]recentAdmission       // binds and admissions the cache may not show yet; guarded by admission
	probes    prober.Prober                       // readiness checks running off the workers, and their results
	restores  jobs.Jobs[types.UID, restoreResult] // restores from Checkpoints running off the workers, by Sandbox UID
	holders   waitingHolders                      // new sessions whose holder waits for the node's other starts
}

// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes/finalizers,verbs=update
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxservices,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile gets the Sandbox, binds it if it is unbound, admits it (the finalizer) when the node has room,
// and then either cleans it up or converges it, writing its status once at the end.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	r.releaseHolders(ctx)
	sbx, err := r.fetch(ctx, req.NamespacedName)
	if sbx == nil || err != nil {
		r.probes.Forget(req.NamespacedName)
		if sbx == nil && err == nil {
			r.Verdicts.Settle(req.NamespacedName) // gone: a verdict about it is moot
		}
		return ctrl.Result{}, err
	}
	ctx, traced := tracePass(ctx, sbx)
	defer func() { traced.end(ctx, sbx, reterr) }() // after the status write below: the root is recorded once it stood
	if sbx.Spec.NodeName == "" {
		return r.reconcileUnbound(ctx, sbx)
	}
	if !sbx.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(sbx, dsv1alpha1.FinalizerCleanup) {
		return ctrl.Result{}, nil // never admitted, so nothing was made for it
	}
	refused, err := r.ensureAdmitted(ctx, sbx)
	switch {
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: status.StaleRetry}, nil // admitted from a stale read; try again on fresh data
	case err != nil:
		return ctrl.Result{}, err
	}

	pass := status.Begin(r.Client, sbx)
	// This agent holds the node's Lease: whatever another agent said while it was away is answered by this
	// pass, which writes Ready, Reconciling and Stalled from what Docker holds.
	status.ClearNodeLost(sbx, r.Options.Node)
	verdict := r.applyVerdict(ctx, sbx)
	defer func() {
		if cleanedUp(sbx) {
			r.Verdicts.Settle(req.NamespacedName)
			return
		}
		if pass.End(ctx, sbx, &result, &reterr) {
			recordTransitions(pass.Before(), sbx)
			if verdict != nil {
				r.announceVerdict(sbx, verdict)
				r.Verdicts.Settle(req.NamespacedName) // its write stands
			}
		}
	}()

	switch {
	case !sbx.DeletionTimestamp.IsZero():
		return r.reconcileDelete(ctx, sbx)
	case refused != nil:
		return r.reportNoRoom(sbx, refused), nil
	case verdict != nil:
		return r.reportVerdict(sbx, verdict), nil
	default:
		return r.reconcileNormal(ctx, sbx)
	}
}

// fetch reads the Sandbox from the node's cache, then from the cache of unbound ones; nil when it is in
// neither (deleted, or bound to another node).
func (r *Reconciler) fetch(ctx context.Context, key types.NamespacedName) (*dsv1alpha1.Sandbox, error) {
	for _, reader := range []client.Reader{r.Client, r.Unbound} {
		sbx := &dsv1alpha1.Sandbox{}
		err := reader.Get(ctx, key, sbx)
		if err == nil {
			return sbx, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading Sandbox %s: %w", key, err)
		}
	}
	return nil, nil
}

// cleanedUp tells whether the Sandbox has let go of its finalizer: its status is no longer this agent's.
func cleanedUp(sbx *dsv1alpha1.Sandbox) bool {
	return !sbx.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(sbx, dsv1alpha1.FinalizerCleanup)
}

// reconcileNormal converges the Sandbox one step after another, in the order of the table in steps.go; a step
// that has to wait, or that settles the Sandbox, ends the pass. A start past its deadline is failed at the end
// (startup.go). Every step is idempotent, so a pass cut short anywhere is simply run again.
func (r *Reconciler) reconcileNormal(ctx context.Context, sbx *dsv1alpha1.Sandbox) (ctrl.Result, error) {
	s := newScope(sbx)
	var err error
	for _, run := range r.steps() {
		var stop bool
		stepCtx, cancel := s.bound(ctx) // a step of a start gets only the time left before its deadline
		stepCtx, endSpan := traceStep(stepCtx, s, run)
		stop, err = run(stepCtx, s)
		endSpan(stop, err)
		cancel()
		if stop || err != nil {
			break
		}
	}
	err = r.enforceStartupDeadline(ctx, s, err)
	r.summarize(s)
	if err != nil {
		return ctrl.Result{}, err // backoff decides when to look again
	}
	return ctrl.Result{RequeueAfter: s.recheck}, nil
}
