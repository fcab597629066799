package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/subnets"
)

// TopologySubnets is the node's pool of topology subnets. Docker's default pools give out after about 30
// networks, so the agent gives each topology network a small subnet of its own choosing. A Sandbox holds
// one (keyed by its UID) from its first topology network until Docker confirms its cleanup; it keeps it
// through rolls, as a newer topology is built only once the older network is gone. The pool is rebuilt from
// the subnet labels of the node's networks before its first use, so a restarted agent never hands out a
// subnet that is still held.
type TopologySubnets struct {
	pool   *subnets.Pool
	mu     sync.Mutex // guards loaded; held while the pool is rebuilt, which releases wait for
	loaded bool
}

// TopologySubnetBits is the size of a topology subnet: a /28 holds the primary, up to eight services, the
// gateway and Docker's network and broadcast addresses (12 of 16).
const TopologySubnetBits = 28

// NewTopologySubnets makes the pool of one agent from an IPv4 CIDR, e.g. 10.120.0.0/16.
func NewTopologySubnets(cidr string) (*TopologySubnets, error) {
	pool, err := subnets.Parse(cidr, TopologySubnetBits)
	if err != nil {
		return nil, fmt.Errorf("topology pool %q: %w", cidr, err)
	}
	return &TopologySubnets{pool: pool}, nil
}

// topologySubnet sets the subnet of a topology network the Sandbox is about to create; with no pool
// configured Docker chooses. It ends the pass when the pool is full, so that the Sandbox waits, Pending,
// for a subnet to be freed instead of failing on Docker's own words.
func (r *Reconciler) topologySubnet(ctx context.Context, s *scope, spec *dd.NetworkSpec) (bool, error) {
	if r.Subnets == nil {
		return false, nil
	}
	if err := r.Subnets.load(ctx, r.Driver); err != nil {
		return s.fail(dsv1alpha1.ReasonNetworkFailed, "reading which topology subnets are taken", err)
	}
	sub, err := r.Subnets.pool.Allocate(string(s.sbx.UID))
	if errors.Is(err, subnets.ErrExhausted) {
		s.note(factAwaiting, dsv1alpha1.ReasonNoFreeSubnet, "no free topology subnet: all %d of the node's pool %s are held; waiting for one to be freed",
			r.Subnets.pool.Size(), r.Subnets.pool.Base())
		s.after(r.Options.BindRetry)
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("allocating a topology subnet: %w", err)
	}
	spec.Subnet, spec.Gateway = sub.String(), subnets.Gateway(sub).String()
	return false, nil
}

// subnetTakenElsewhere tells, after Docker refused to create the network, whether the refusal was its
// subnet overlapping a network outside this agent's bookkeeping (another agent's on the same daemon, or one
// a person made): the network's name is free. The subnet is then excluded for good and the Sandbox's next
// pass takes another.
func (r *Reconciler) subnetTakenElsewhere(ctx context.Context, s *scope, spec dd.NetworkSpec, err error) bool {
	if r.Subnets == nil || spec.Subnet == "" || !dd.IsConflict(err) {
		return false
	}
	if n, err := r.Driver.ObserveNetwork(ctx, spec.Name); err != nil || n.Exists {
		return false
	}
	r.Subnets.pool.Exclude(netip.MustParsePrefix(spec.Subnet))
	s.note(factRetrying, dsv1alpha1.ReasonNetworkFailed, "topology subnet %s is taken by a network this agent did not make; taking another", spec.Subnet)
	s.after(status.StaleRetry)
	return true
}

// releaseSubnet frees the Sandbox's subnet; call it only once no network of the Sandbox is left in Docker.
func (r *Reconciler) releaseSubnet(uid string) {
	if r.Subnets == nil {
		return
	}
	// Not while the pool is being rebuilt: the listing may predate the removal this release follows.
	r.Subnets.mu.Lock()
	defer r.Subnets.mu.Unlock()
	r.Subnets.pool.Release(uid)
}

// load rebuilds the pool from the node's networks once: each topology network's subnet label tells which
// Sandbox holds which subnet.
func (t *TopologySubnets) load(ctx context.Context, driver dd.Driver) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loaded {
		return nil
	}
	networks, err := driver.ListNetworks(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing the node's networks: %w", err)
	}
	for _, n := range networks {
		label := n.Labels[dsv1alpha1.LabelSubnet]
		owner, _, _ := dd.OwnerFromLabels(n.Labels)
		if label == "" || owner.UID == "" {
			continue // the shared bridge, or a network whose subnet Docker chose
		}
		sub, err := netip.ParsePrefix(label)
		if err == nil {
			err = t.pool.Reserve(owner.UID, sub)
		}
		if err != nil {
			// Made under another pool setting: it occupies no subnet of this one, or, if it overlaps one,
			// Docker refuses that subnet and subnetTakenElsewhere excludes it.
			ctrl.LoggerFrom(ctx).Info("A topology network's subnet is not taken into the pool", "network", n.Name, "reason", err.Error())
		}
	}
	t.loaded = true
	return nil
}
