package nodelifecycle

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// Reconciler looks at the agents' Leases every LostAfter/4 and, when this agent is the writer (see writes),
// marks the Sandboxes of every lost node. It runs only while its agent holds its own Lease. It has no
// Docker driver: it makes no Docker call, and changes no spec, finalizer or binding.
type Reconciler struct {
	Client    client.Client // writes the status of lost nodes' Sandboxes
	Leases    client.Reader // the Leases of Options.Namespace (the manager's cache)
	APIReader client.Reader // lists a lost node's Sandboxes (not in this agent's cache) and reads its Lease afresh
	Options   Options
}

// Options say whose Leases are judged and how.
type Options struct {
	Node      string        // this agent's node
	Namespace string        // of the agents' Leases
	LostAfter time.Duration // a Lease unchanged this long means its node is lost
}

// SetupWithManager adds the reconciler to the manager, to run while this agent leads its node. It is a look
// at every Lease on a timer, not a queue of objects: the controller options do not apply to it.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, _ controller.Options) error {
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding the node lifecycle reconciler: %w", err)
	}
	return nil
}

// Start looks until ctx ends.
func (c *Reconciler) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("node-lifecycle")
	b := newBook(c.Options.Node, c.Options.LostAfter)
	t := time.NewTicker(c.Options.LostAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := c.pass(ctx, b, time.Now()); err != nil {
			log.Info("Looking for lost nodes failed; trying again", "reason", err.Error())
		}
	}
}

// pass records the Leases and, when this agent writes, marks the lost nodes' Sandboxes.
func (c *Reconciler) pass(ctx context.Context, b *book, now time.Time) error {
	var leases coordinationv1.LeaseList
	if err := c.Leases.List(ctx, &leases, client.InNamespace(c.Options.Namespace)); err != nil {
		return fmt.Errorf("listing the node Leases: %w", err)
	}
	b.observe(leases.Items, now)
	if b.blind(now) {
		return nil // this agent's own renewals do not show: what it sees of the others is as stale
	}
	fresh, lost := b.split(now)
	if !writes(c.Options.Node, fresh) {
		return nil
	}
	for _, node := range lost {
		if node == c.Options.Node {
			continue
		}
		if err := c.markLost(ctx, b, node); err != nil {
			return err
		}
	}
	return nil
}

// markLost marks the Sandboxes bound to node. The Lease is read again after the Sandboxes are listed: if
// the node's agent came back before the list, the Lease shows it and nothing is written; if it comes back
// after, its first passes change the Sandboxes, so that a write from this list is refused (resourceVersion)
// or, landing first, is seen and undone by those passes.
func (c *Reconciler) markLost(ctx context.Context, b *book, node string) error {
	log := ctrl.LoggerFrom(ctx).WithName("node-lifecycle")
	var list dsv1alpha1.SandboxList
	if err := c.APIReader.List(ctx, &list, client.MatchingFields{dsv1alpha1.FieldSandboxNodeName: node}); err != nil {
		return fmt.Errorf("listing the Sandboxes of node %s: %w", node, err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	lease := &coordinationv1.Lease{}
	if err := c.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Options.Namespace, Name: LeaseName(node)}, lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !b.unchanged(node, lease) {
		return nil
	}
	renewed := b.nodes[node].renewed
	for i := range list.Items {
		sbx := &list.Items[i]
		before := sbx.DeepCopy()
		if !status.MarkNodeLost(sbx, node, renewed) {
			continue
		}
		err := c.Client.Status().Patch(ctx, sbx, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			continue // changed or gone since the list: looked at again on the next pass
		case err != nil:
			return fmt.Errorf("marking Sandbox %s NodeLost: %w", sbx.Name, err)
		}
		log.Info("Marked a Sandbox of a lost node", "sandbox", client.ObjectKeyFromObject(sbx), "node", node, "leaseRenewed", renewed)
	}
	return nil
}
