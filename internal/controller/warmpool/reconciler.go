// Package warmpool holds the SandboxWarmPool reconciler: it keeps a pool's Sandboxes of its template started,
// replaces them when the template changes, gives them up while other Sandboxes wait for room, and deletes
// them when the pool goes. Pools belong to no node: every agent reconciles them alike (docs/design/pools.md).
package warmpool

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

// Reconciler keeps SandboxWarmPools filled. Every agent runs it for every pool: the members are counted over
// every node from the API server, new members get names every agent agrees on (the lowest free index), so
// two agents filling one gap make one Sandbox; each agent deletes only members bound to its own node, the
// only Sandboxes it may delete (config/rbac/agent_confinement.yaml).
type Reconciler struct {
	client.Client
	APIReader client.Reader // the pool's Sandboxes on every node, fresh
	Unbound   cache.Cache   // Sandboxes bound to no node: those waiting for room
	Options   Options
}

// Options are the agent's node and timing.
type Options struct {
	Node      string
	SpecRetry time.Duration // how soon a pool whose template is missing looks again
}

// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxwarmpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxwarmpools/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxwarmpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxtemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes,verbs=list;create;delete

// Reconcile counts the pool's members, creates and deletes what the plan says, and writes the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	pool := &dsv1alpha1.SandboxWarmPool{}
	if err := r.Get(ctx, req.NamespacedName, pool); apierrors.IsNotFound(err) {
		return ctrl.Result{}, r.deleteOrphans(ctx, req.NamespacedName, "")
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading SandboxWarmPool %s: %w", req.NamespacedName, err)
	}
	if !pool.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.deleteOrphans(ctx, req.NamespacedName, "")
	}
	if err := r.deleteOrphans(ctx, req.NamespacedName, pool.UID); err != nil {
		return ctrl.Result{}, err
	}
	pass := status.Begin(r.Client, pool)
	defer pass.End(ctx, pool, &result, &reterr)

	tpl := &dsv1alpha1.SandboxTemplate{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: pool.Namespace, Name: pool.Spec.TemplateRef.Name}, tpl); apierrors.IsNotFound(err) {
		status.Summarize(pool, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonTemplateNotFound,
			Message: fmt.Sprintf("SandboxTemplate %q does not exist", pool.Spec.TemplateRef.Name)})
		return ctrl.Result{RequeueAfter: r.Options.SpecRetry}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading SandboxTemplate %s: %w", pool.Spec.TemplateRef.Name, err)
	}
	if tpl.Spec.Sandbox.Start == dsv1alpha1.StartLazy {
		// A warm Sandbox is one started ahead of its claim; a lazy one starts at its first command, so a
		// pool of them would hold room for nothing a claim could not get as fast from a cold start
		// (docs/design/lazy-start.md).
		status.Summarize(pool, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonLazyTemplate,
			Message: fmt.Sprintf("SandboxTemplate %q sets start: Lazy, and a pool keeps Sandboxes started: claim the template's Sandboxes cold (a lazy one is Ready at once), or drop start: Lazy from it", pool.Spec.TemplateRef.Name)})
		return ctrl.Result{}, nil // the template's watch brings the pass that fills the pool once it changes
	}
	members, taken, err := r.members(ctx, pool)
	if err != nil {
		return ctrl.Result{}, err
	}
	waiting, err := r.waitingForRoom(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	hash := templates.Hash(tpl)
	p := plan(pool, r.counted(pool, members), hash, waiting)
	if err := r.act(ctx, pool, tpl, hash, p, taken); err != nil {
		return ctrl.Result{}, err
	}
	setPoolStatus(pool, members, hash, waiting)
	return ctrl.Result{}, nil
}

// act deletes the plan's members that are bound here and creates its new ones under the lowest free names.
func (r *Reconciler) act(ctx context.Context, pool *dsv1alpha1.SandboxWarmPool, tpl *dsv1alpha1.SandboxTemplate,
	hash string, p poolPlan, taken map[string]bool) error {
	for _, sbx := range p.remove {
		if sbx.Spec.NodeName != r.Options.Node {
			continue // its own agent deletes it; an unbound one once an agent binds it
		}
		if err := r.Delete(ctx, sbx, client.Preconditions{UID: &sbx.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the pool's Sandbox %s: %w", sbx.Name, err)
		}
	}
	perNode := pool.Spec.Scope == dsv1alpha1.PoolNode
	for i, made := 0, 0; made < p.create; i++ {
		name := templates.MemberName(pool.Name, i)
		if taken[name] {
			continue
		}
		sbx := templates.Warm(pool, tpl, name, hash)
		if perNode {
			sbx.Spec.NodeName = r.Options.Node
		}
		err := r.Create(ctx, sbx)
		if apierrors.IsAlreadyExists(err) && perNode {
			continue // another node's agent took the name for its own node's member: this node's is still due
		}
		if client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating the pool's Sandbox %s: %w", name, err)
		}
		made++ // or another agent made it, filling the same gap of a cluster-wide pool
	}
	return nil
}

// counted is the members the pool's replicas count: all of them, or with scope Node those bound to this
// agent's node, the only ones this agent keeps.
func (r *Reconciler) counted(pool *dsv1alpha1.SandboxWarmPool, members []*dsv1alpha1.Sandbox) []*dsv1alpha1.Sandbox {
	if pool.Spec.Scope != dsv1alpha1.PoolNode {
		return members
	}
	var mine []*dsv1alpha1.Sandbox
	for _, sbx := range members {
		if sbx.Spec.NodeName == r.Options.Node {
			mine = append(mine, sbx)
		}
	}
	return mine
}
