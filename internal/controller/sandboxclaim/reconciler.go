// Package sandboxclaim holds the SandboxClaim reconciler: it gives a claim a warm Sandbox of its pool in two
// API writes and no Docker call, or has one started cold when the pool has none ready, and deletes the
// claim's Sandbox when the claim goes. Claims belong to no node: the agent of the node holding a warm
// Sandbox binds it (docs/design/pools.md).
package sandboxclaim

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/templates"
)

// Reconciler binds SandboxClaims. Every agent runs it for every claim; an agent binds only warm Sandboxes of
// its own node, with the write guarded by the Sandbox's resourceVersion, so that of two claims racing for one
// Sandbox exactly one gets it, and records the binding on the claim guarded by the claim's, so that of two
// agents binding one claim exactly one binding stands (the other Sandbox is deleted).
type Reconciler struct {
	client.Client
	APIReader client.Reader // Sandboxes on other nodes, and whether a claim is really gone
	Unbound   cache.Cache   // Sandboxes bound to no node: a cold start's until an agent binds it
	Options   Options
	flight    *inFlight // what this agent's passes bound ahead of its cache (made by SetupWithManager)
}

// Options are the agent's node and timing.
type Options struct {
	Node      string
	SpecRetry time.Duration // how soon a claim whose pool or template is missing looks again
}

// elsewhereRetry is how soon a claim that another node's warm Sandbox should take is looked at again, in
// case that node's agent did not.
const elsewhereRetry = 2 * time.Second

// busyRetry is how soon a claim looks again when the only warm Sandboxes left are being bound by other passes
// of this agent: one of those may fail and leave its Sandbox to this claim, and a cold start is seconds.
const busyRetry = 20 * time.Millisecond

// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxclaims/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxclaims/finalizers,verbs=update
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxwarmpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes,verbs=get;list;create;update;patch;delete

// Reconcile follows a bound claim's Sandbox, or binds an unbound claim, and writes the claim's status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	claim := &dsv1alpha1.SandboxClaim{}
	if err := r.Get(ctx, req.NamespacedName, claim); apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.release(ctx, req.NamespacedName)
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading SandboxClaim %s: %w", req.NamespacedName, err)
	}
	if !claim.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, req.NamespacedName)
	}
	if claim.Status.SandboxName == "" && r.flight.statusUnseen(claim) {
		// A pass of this agent wrote the binding to the claim's status, and the cache does not show it yet
		// (the Sandbox's event, which brought this pass, comes first). A write from this copy could only
		// conflict: an API write for nothing, one per claim when 20 come at once. The API server holds the
		// binding; the write's own event brings the next pass.
		return ctrl.Result{}, nil
	}
	held, err := r.held(ctx, claim)
	if err != nil {
		return ctrl.Result{}, err
	}
	pass := status.Begin(r.Client, claim)
	defer func() {
		if pass.End(ctx, claim, &result, &reterr) && pass.Before().Status.SandboxName == "" && claim.Status.SandboxName != "" {
			r.flight.recorded(claim)
		}
	}()
	if claim.Status.SandboxName != "" || held != nil {
		r.flight.seen(req.NamespacedName)
		return r.follow(ctx, claim, held)
	}
	if r.flight.unseen(claim) {
		// A pass of this agent bound it and the cache is behind: binding again would take a second Sandbox.
		// The event of the binding brings the next pass; the retry is in case the status write was lost.
		return ctrl.Result{RequeueAfter: status.StaleRetry}, nil
	}
	return r.bind(ctx, claim)
}

// bind gives an unbound claim a warm Sandbox of this node, leaves it to another node's agent when only
// another node has one, or starts one cold.
func (r *Reconciler) bind(ctx context.Context, claim *dsv1alpha1.SandboxClaim) (ctrl.Result, error) {
	pool := &dsv1alpha1.SandboxWarmPool{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.PoolRef.Name}, pool); apierrors.IsNotFound(err) {
		status.Summarize(claim, status.Summary{Reason: dsv1alpha1.ReasonPoolNotFound,
			Message: fmt.Sprintf("SandboxWarmPool %q does not exist", claim.Spec.PoolRef.Name)})
		return ctrl.Result{RequeueAfter: r.Options.SpecRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading SandboxWarmPool %s: %w", claim.Spec.PoolRef.Name, err)
	}
	tpl := &dsv1alpha1.SandboxTemplate{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: pool.Spec.TemplateRef.Name}, tpl); apierrors.IsNotFound(err) {
		status.Summarize(claim, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonTemplateNotFound,
			Message: fmt.Sprintf("SandboxTemplate %q of SandboxWarmPool %q does not exist", pool.Spec.TemplateRef.Name, pool.Name)})
		return ctrl.Result{RequeueAfter: r.Options.SpecRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading SandboxTemplate %s: %w", pool.Spec.TemplateRef.Name, err)
	}
	if why := templates.Refused(claim, tpl); why != "" {
		status.Summarize(claim, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonOverrideNotAllowed, Message: why})
		return ctrl.Result{}, nil
	}
	if len(claim.Spec.SecretFiles) == 0 {
		bound, busy, err := r.bindWarm(ctx, claim, pool, tpl)
		if bound || err != nil {
			return ctrl.Result{}, err
		}
		if busy {
			return ctrl.Result{RequeueAfter: busyRetry}, nil
		}
		elsewhere, err := r.warmElsewhere(ctx, pool)
		if err != nil {
			return ctrl.Result{}, err
		}
		if elsewhere {
			status.Summarize(claim, status.Summary{Reason: dsv1alpha1.ReasonPending,
				Message: "waiting for the agent of a node with a warm Sandbox of the pool"})
			return ctrl.Result{RequeueAfter: elsewhereRetry}, nil
		}
	}
	return ctrl.Result{}, r.startCold(ctx, claim, tpl)
}
