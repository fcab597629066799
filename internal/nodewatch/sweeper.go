package nodewatch

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/topology"
)

// Sweeper looks over everything Docker holds for the node at start-up, every Period, and at once when the
// event stream was broken. It has the Cleaner remove orphans (resources whose Sandbox no longer exists) and
// asks for a pass over each Sandbox whose containers are not what its status says (an event was missed). It
// is the agent's only periodic look at Docker: three listings per period for the whole node, however many
// Sandboxes idle.
type Sweeper struct {
	Cleaner   Cleaner
	Driver    dd.Driver
	Sandboxes client.Reader // the node's Sandboxes: the manager's cache
	APIReader client.Reader // confirms with the API server that a Sandbox the cache lacks is gone
	Node      string
	Period    time.Duration
	Out       chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox] // the Sandbox reconciler's requeues

	kick chan struct{}
}

// Cleaner is what the sweeper has the Sandbox reconciler do, the one that removes what Docker holds for a
// Sandbox and serves the egress proxy on its bridges.
type Cleaner interface {
	// RemoveOrphan removes everything Docker holds for the Sandbox uid, which no longer exists.
	RemoveOrphan(ctx context.Context, uid types.UID) error
	// KeepEgress serves the egress proxy on exactly the Isolated bridges among networks, every network of
	// the node.
	KeepEgress(networks []dd.NetworkInfo)
}

// NewSweeper returns the sweeper s describes, ready to start.
func NewSweeper(s Sweeper) *Sweeper {
	s.kick = make(chan struct{}, 1)
	return &s
}

// Kick asks for a sweep now (the event stream was resumed).
func (w *Sweeper) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Start sweeps until ctx ends (a manager runnable, run only by the Lease holder).
func (w *Sweeper) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("sweeper")
	ticker := time.NewTicker(w.Period)
	defer ticker.Stop()
	for {
		if err := w.sweep(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "Sweep failed; trying again next period")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-w.kick:
		}
	}
}

// holdings is what Docker holds for one Sandbox UID.
type holdings struct {
	key        types.NamespacedName
	containers []dd.ContainerInfo
	networks   []dd.NetworkInfo
}

func (w *Sweeper) sweep(ctx context.Context) error {
	held, networks, err := w.list(ctx)
	if err != nil {
		return err
	}
	w.Cleaner.KeepEgress(networks)
	log := ctrl.LoggerFrom(ctx).WithName("sweeper")
	for uid, h := range held {
		sbx, err := w.owner(ctx, h.key, uid)
		switch {
		case err != nil:
			log.Error(err, "Reading the owner of Docker resources", "sandbox", h.key)
		case sbx == nil:
			log.Info("Removing orphaned Docker resources", "sandbox", h.key, "uid", uid)
			if err := w.Cleaner.RemoveOrphan(ctx, uid); err != nil {
				log.Error(err, "Orphan removal not confirmed; retrying next sweep", "sandbox", h.key)
			}
		case drifted(sbx, h):
			handoff.Requeue(ctx, w.Out, h.key.Namespace, h.key.Name)
		}
	}
	return w.requeueEmptied(ctx, held)
}

// list groups this node's labelled containers, networks and volumes by owner UID (the shared bridges have
// none), and returns every network of the node too.
func (w *Sweeper) list(ctx context.Context) (map[types.UID]*holdings, []dd.NetworkInfo, error) {
	containers, err := w.Driver.ListContainers(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the node's containers: %w", err)
	}
	networks, err := w.Driver.ListNetworks(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the node's networks: %w", err)
	}
	volumes, err := w.Driver.ListVolumes(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the node's volumes: %w", err)
	}
	held := map[types.UID]*holdings{}
	at := func(labels map[string]string) *holdings {
		owner, _, _ := dd.OwnerFromLabels(labels)
		if owner.UID == "" {
			return nil
		}
		h := held[types.UID(owner.UID)]
		if h == nil {
			h = &holdings{key: types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}}
			held[types.UID(owner.UID)] = h
		}
		return h
	}
	for _, c := range containers {
		if h := at(c.Labels); h != nil {
			h.containers = append(h.containers, c)
		}
	}
	for _, n := range networks {
		if h := at(n.Labels); h != nil {
			h.networks = append(h.networks, n)
		}
	}
	for _, v := range volumes {
		at(v.Labels) // a volume alone still marks its owner, so that an orphaned one is found
	}
	return held, networks, nil
}

// owner is the Sandbox with this UID, or nil when it no longer exists. The cache answers for the living;
// an absence is confirmed with the API server, so that a lagging cache never makes a new Sandbox an orphan.
func (w *Sweeper) owner(ctx context.Context, key types.NamespacedName, uid types.UID) (*dsv1alpha1.Sandbox, error) {
	sbx := &dsv1alpha1.Sandbox{}
	if err := w.Sandboxes.Get(ctx, key, sbx); err == nil && sbx.UID == uid {
		return sbx, nil
	}
	switch err := w.APIReader.Get(ctx, key, sbx); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Sandbox %s: %w", key, err)
	case sbx.UID != uid || sbx.Spec.NodeName != w.Node:
		return nil, nil
	}
	return sbx, nil
}

// requeueEmptied asks for a pass over live Sandboxes of the node that had containers and now have none.
func (w *Sweeper) requeueEmptied(ctx context.Context, held map[types.UID]*holdings) error {
	var list dsv1alpha1.SandboxList
	if err := w.Sandboxes.List(ctx, &list); err != nil {
		return fmt.Errorf("listing the node's Sandboxes: %w", err)
	}
	for _, sbx := range list.Items {
		if _, ok := held[sbx.UID]; !ok && sbx.Status.TopologyGeneration > 0 {
			handoff.Requeue(ctx, w.Out, sbx.Namespace, sbx.Name)
		}
	}
	return nil
}

// drifted tells whether what Docker holds for a Sandbox differs from what its status says: a container of
// another generation, a holder that stopped, a container that ended or froze without the agent noticing, a
// recorded container that is gone, or a deletion still to finish.
func drifted(sbx *dsv1alpha1.Sandbox, h *holdings) bool {
	if !sbx.DeletionTimestamp.IsZero() {
		return true
	}
	settled, gen := topology.Settled(sbx), sbx.Status.TopologyGeneration
	wantPaused := sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused
	seen := map[string]bool{}
	for _, c := range h.containers {
		owner, role, _ := dd.OwnerFromLabels(c.Labels)
		seen[c.ID] = true
		switch {
		case role == dsv1alpha1.RoleHolder:
			if !topology.Alive(c) {
				return true
			}
		case owner.Generation != gen, c.State == dd.StateCreated:
			return true
		case settled && topology.Alive(c):
			return true
		case !settled && (topology.Ended(c) || (topology.Alive(c) && (c.State == dd.StatePaused) != wantPaused)):
			return true
		}
	}
	for _, n := range h.networks {
		if owner, _, _ := dd.OwnerFromLabels(n.Labels); owner.Generation != gen {
			return true
		}
	}
	if settled {
		return false
	}
	if id := sbx.Status.ContainerID; id != "" && !seen[id] {
		return true
	}
	for _, st := range sbx.Status.Services {
		if st.ContainerID != "" && !seen[st.ContainerID] {
			return true
		}
	}
	return false
}
