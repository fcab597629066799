package fake

import (
	"context"
	"fmt"
	"sort"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

type network struct {
	info   dd.NetworkInfo
	nextIP int
}

// EnsureNetwork creates or adopts the network like the real driver.
func (f *Driver) EnsureNetwork(ctx context.Context, spec dd.NetworkSpec) (dd.NetworkInfo, error) {
	return call(f, ctx, OpEnsureNetwork, spec.Name, func() (dd.NetworkInfo, error) {
		if err := spec.Validate(); err != nil {
			return dd.NetworkInfo{}, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		want := dd.NetworkLabels(f.node, spec)
		if n, ok := f.networks[spec.Name]; ok {
			if !dd.Adoptable(n.info.Labels, want) {
				return dd.NetworkInfo{}, dd.NewError(dd.KindConflict, dd.PhaseNetwork, spec.Name, "the name is held by a network Dockside did not make for this owner")
			}
			return n.snapshot(), nil
		}
		f.nextID++
		n := &network{info: dd.NetworkInfo{
			Exists: true, ID: fmt.Sprintf("net%04d", f.nextID), Name: spec.Name, Internal: spec.Internal,
			ICC: spec.ICC, Subnet: spec.Subnet, Gateway: spec.Gateway, Bridge: spec.Bridge, Labels: want,
		}}
		if spec.Subnet == "" {
			// Docker picks a subnet from its own pools, and its first address as the gateway.
			n.info.Subnet, n.info.Gateway = fmt.Sprintf("172.31.%d.0/24", f.nextID%256), fmt.Sprintf("172.31.%d.1", f.nextID%256)
		}
		f.networks[spec.Name] = n
		return n.snapshot(), nil
	})
}

// ObserveNetwork reports the network; absent is Exists false, foreign a conflict.
func (f *Driver) ObserveNetwork(ctx context.Context, name string) (dd.NetworkInfo, error) {
	return call(f, ctx, OpObserveNetwork, name, func() (dd.NetworkInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		n, ok := f.network(name)
		switch {
		case !ok:
			return dd.NetworkInfo{}, nil
		case !f.owns(n.info.Labels):
			return dd.NetworkInfo{}, dd.NewError(dd.KindConflict, dd.PhaseObserve, name, "the network is not Dockside's on this node")
		}
		return n.snapshot(), nil
	})
}

// RemoveNetwork removes the network; Docker refuses while a running container is attached.
func (f *Driver) RemoveNetwork(ctx context.Context, name string) error {
	_, err := call(f, ctx, OpRemoveNetwork, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		n, ok := f.network(name)
		switch {
		case !ok:
			return struct{}{}, nil
		case !f.owns(n.info.Labels):
			return struct{}{}, dd.NewError(dd.KindConflict, dd.PhaseRemove, name, "the network is not Dockside's on this node")
		}
		for _, c := range f.containers {
			if attached, _ := f.network(c.spec.Network.Name); attached == n && c.active() {
				return struct{}{}, dd.NewError(dd.KindConflict, dd.PhaseRemove, name, "Docker refused it in the current state")
			}
		}
		delete(f.networks, n.info.Name)
		return struct{}{}, nil
	})
	return err
}

// ListNetworks lists this node's networks whose labels include match, by name.
func (f *Driver) ListNetworks(ctx context.Context, match map[string]string) ([]dd.NetworkInfo, error) {
	return call(f, ctx, OpListNetworks, "", func() ([]dd.NetworkInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []dd.NetworkInfo
		for _, n := range f.networks {
			if f.matches(n.info.Labels, match) {
				out = append(out, n.snapshot())
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	})
}

// AddForeignNetwork makes a network of that name that Dockside did not create (no Dockside labels).
func (f *Driver) AddForeignNetwork(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.networks[name] = &network{info: dd.NetworkInfo{Exists: true, ID: "foreign-" + name, Name: name, ICC: true, Labels: map[string]string{}}}
}

// network finds a network by its name or its ID. Called with f.mu held.
func (f *Driver) network(ref string) (*network, bool) {
	return byNameOrID(f.networks, ref, func(n *network) string { return n.info.ID })
}

func (n *network) snapshot() dd.NetworkInfo {
	info := n.info
	info.Labels = copyLabels(n.info.Labels)
	return info
}

// allocateIP hands out addresses like Docker's IPAM, from 10.99.x.y when no subnet was given.
func (n *network) allocateIP() string {
	n.nextIP++
	return fmt.Sprintf("10.99.%d.%d", n.nextIP/250, 2+n.nextIP%250)
}
