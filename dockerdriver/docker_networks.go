package dockerdriver

import (
	"context"
	"errors"
	"strconv"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// The bridge driver's switch for traffic between containers on one bridge, and its host interface name.
const (
	iccOption    = "com.docker.network.bridge.enable_icc"
	bridgeOption = "com.docker.network.bridge.name"
)

// EnsureNetwork creates the bridge, or adopts the one of that name if it carries the same identity.
func (d *Docker) EnsureNetwork(ctx context.Context, spec NetworkSpec) (NetworkInfo, error) {
	if err := spec.Validate(); err != nil {
		return NetworkInfo{}, err
	}
	defer d.locks.lock("network/" + spec.Name)()
	want := NetworkLabels(d.node, spec)
	if info, err := d.adoptNetwork(ctx, spec.Name, want); err != nil || info.Exists {
		return info, err
	}
	_, err := d.cli.NetworkCreate(ctx, spec.Name, networkCreateOptions(spec, want))
	if err != nil && !cerrdefs.IsConflict(err) {
		return NetworkInfo{}, d.classify(err, PhaseNetwork, spec.Name)
	}
	// Created, or created by someone else meanwhile: what exists now decides.
	info, err := d.adoptNetwork(ctx, spec.Name, want)
	if err == nil && !info.Exists {
		err = NewError(KindUncertain, PhaseNetwork, spec.Name, "created but not found afterwards")
	}
	return info, err
}

// adoptNetwork observes the named network and accepts it only with the wanted identity and subnet.
func (d *Docker) adoptNetwork(ctx context.Context, name string, want map[string]string) (NetworkInfo, error) {
	info, err := d.observeNetwork(ctx, name, PhaseNetwork)
	if err != nil || !info.Exists {
		return info, err
	}
	if !Adoptable(info.Labels, want) {
		return NetworkInfo{}, NewError(KindConflict, PhaseNetwork, name, "the name is held by a network Dockside did not make for this owner")
	}
	return info, nil
}

// ObserveNetwork reports the named network; absent is Exists false. A network of that name that this node
// does not own is a conflict.
func (d *Docker) ObserveNetwork(ctx context.Context, name string) (NetworkInfo, error) {
	info, err := d.observeNetwork(ctx, name, PhaseObserve)
	if err == nil && info.Exists && !d.owns(info.Labels) {
		return NetworkInfo{}, NewError(KindConflict, PhaseObserve, name, "the network is not Dockside's on this node")
	}
	return info, err
}

func (d *Docker) observeNetwork(ctx context.Context, name string, phase Phase) (NetworkInfo, error) {
	n, err := d.cli.NetworkInspect(ctx, name, network.InspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return NetworkInfo{}, nil
	}
	if err != nil {
		return NetworkInfo{}, d.classify(err, phase, name)
	}
	// Inspect also matches ID prefixes; only the exact name counts.
	if n.Name != name && n.ID != name {
		return NetworkInfo{}, nil
	}
	return networkInfo(n), nil
}

// RemoveNetwork removes the network; a missing one is fine, a foreign one is a conflict.
func (d *Docker) RemoveNetwork(ctx context.Context, name string) error {
	info, err := d.ObserveNetwork(ctx, name)
	if err != nil || !info.Exists {
		return phased(err, PhaseRemove)
	}
	if err := d.cli.NetworkRemove(ctx, info.ID); err != nil && !cerrdefs.IsNotFound(err) {
		return d.classify(err, PhaseRemove, name)
	}
	return nil
}

// ListNetworks lists this node's networks whose labels include match.
func (d *Docker) ListNetworks(ctx context.Context, match map[string]string) ([]NetworkInfo, error) {
	ns, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: d.labelFilter(match)})
	if err != nil {
		return nil, d.classify(err, PhaseObserve, "")
	}
	out := make([]NetworkInfo, 0, len(ns))
	for _, n := range ns {
		out = append(out, networkInfo(n))
	}
	return out, nil
}

func networkCreateOptions(spec NetworkSpec, labels map[string]string) network.CreateOptions {
	opts := network.CreateOptions{
		Driver:   "bridge",
		Internal: spec.Internal,
		Labels:   labels,
		Options:  map[string]string{iccOption: strconv.FormatBool(spec.ICC)},
	}
	if spec.Bridge != "" {
		opts.Options[bridgeOption] = spec.Bridge
	}
	if spec.Subnet != "" {
		opts.IPAM = &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: spec.Subnet, Gateway: spec.Gateway}}}
	}
	return opts
}

func networkInfo(n network.Inspect) NetworkInfo {
	info := NetworkInfo{Exists: true, ID: n.ID, Name: n.Name, Internal: n.Internal, Labels: n.Labels}
	// The bridge driver defaults ICC to on when the option is absent.
	info.ICC = n.Options[iccOption] != "false"
	info.Bridge = n.Options[bridgeOption]
	if len(n.IPAM.Config) > 0 {
		info.Subnet, info.Gateway = n.IPAM.Config[0].Subnet, n.IPAM.Config[0].Gateway
	}
	return info
}

// labelFilter selects this node's managed objects whose labels include match.
func (d *Docker) labelFilter(match map[string]string) filters.Args {
	f := filters.NewArgs(filters.Arg("label", dsv1alpha1.LabelManaged+"=true"), filters.Arg("label", dsv1alpha1.LabelNode+"="+d.node))
	for k, v := range match {
		f.Add("label", k+"="+v)
	}
	return f
}

// owns tells whether labels mark an object made by this node's driver.
func (d *Docker) owns(labels map[string]string) bool {
	return Owned(labels, d.node)
}

// phased re-labels a driver error with the phase of the operation it happened in.
func phased(err error, phase Phase) error {
	if e := (*Error)(nil); errors.As(err, &e) {
		c := *e
		c.Phase = phase
		return &c
	}
	return err
}
