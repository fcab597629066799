package conformance

import (
	"context"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Object is a kind of Docker object the driver ensures, observes and removes.
type Object string

const (
	Container Object = "container"
	Network   Object = "network"
	Volume    Object = "volume"
)

// Objects are the kinds the rows of eachKind run for.
var Objects = []Object{Container, Network, Volume}

// objectOps reduces a kind to what the per-kind rows do with it. ensure asks for the object of owner o
// under name; key identifies the object it returned: the ID of a container or network, the name of a
// volume (volumes have no other identity).
type objectOps struct {
	ensure      func(ctx context.Context, h Harness, o dd.Owner, name string) (key string, err error)
	observe     func(ctx context.Context, d dd.Driver, name string) (exists bool, err error)
	remove      func(ctx context.Context, d dd.Driver, name string) error
	list        func(ctx context.Context, d dd.Driver, o dd.Owner) ([]listed, error)
	ensurePhase dd.Phase // the phase of an ensure's errors
}

// listed is one object a list returned.
type listed struct{ key, name string }

// nameOf is the name an ensure of kind gives the object of owner o.
func nameOf(kind Object, o dd.Owner) string {
	role := map[Object]string{Container: dsv1alpha1.RolePrimary, Network: dsv1alpha1.RoleNetwork, Volume: dsv1alpha1.RoleWorkspace}[kind]
	return dd.Name(o, role, "")
}

// ensureOwn ensures the object of kind of owner o under its own name.
func ensureOwn(ctx context.Context, h Harness, kind Object, o dd.Owner) (key string, err error) {
	return ops[kind].ensure(ctx, h, o, nameOf(kind, o))
}

var ops = map[Object]objectOps{
	Container: {
		ensure: func(ctx context.Context, h Harness, o dd.Owner, name string) (string, error) {
			s := containerSpec(h, o, dsv1alpha1.RolePrimary)
			s.Name = name
			info, err := h.Driver.EnsureContainer(ctx, s)
			return info.ID, err
		},
		observe: func(ctx context.Context, d dd.Driver, name string) (bool, error) {
			info, err := d.ObserveContainer(ctx, name)
			return info.Exists, err
		},
		remove: func(ctx context.Context, d dd.Driver, name string) error {
			return d.RemoveContainer(ctx, name)
		},
		list: func(ctx context.Context, d dd.Driver, o dd.Owner) ([]listed, error) {
			cs, err := d.ListContainers(ctx, ownerMatch(o))
			out := make([]listed, 0, len(cs))
			for _, c := range cs {
				out = append(out, listed{c.ID, c.Name})
			}
			return out, err
		},
		ensurePhase: dd.PhaseCreate,
	},
	Network: {
		ensure: func(ctx context.Context, h Harness, o dd.Owner, name string) (string, error) {
			info, err := h.Driver.EnsureNetwork(ctx, dd.NetworkSpec{Name: name, Owner: o, Internal: true})
			return info.ID, err
		},
		observe: func(ctx context.Context, d dd.Driver, name string) (bool, error) {
			info, err := d.ObserveNetwork(ctx, name)
			return info.Exists, err
		},
		remove: func(ctx context.Context, d dd.Driver, name string) error {
			return d.RemoveNetwork(ctx, name)
		},
		list: func(ctx context.Context, d dd.Driver, o dd.Owner) ([]listed, error) {
			ns, err := d.ListNetworks(ctx, ownerMatch(o))
			out := make([]listed, 0, len(ns))
			for _, n := range ns {
				out = append(out, listed{n.ID, n.Name})
			}
			return out, err
		},
		ensurePhase: dd.PhaseNetwork,
	},
	Volume: {
		ensure: func(ctx context.Context, h Harness, o dd.Owner, name string) (string, error) {
			info, err := h.Driver.EnsureVolume(ctx, volumeSpec(o, name))
			return info.Name, err
		},
		observe: func(ctx context.Context, d dd.Driver, name string) (bool, error) {
			info, err := d.ObserveVolume(ctx, name)
			return info.Exists, err
		},
		remove: func(ctx context.Context, d dd.Driver, name string) error {
			return d.RemoveVolume(ctx, name)
		},
		list: func(ctx context.Context, d dd.Driver, o dd.Owner) ([]listed, error) {
			vs, err := d.ListVolumes(ctx, ownerMatch(o))
			out := make([]listed, 0, len(vs))
			for _, v := range vs {
				out = append(out, listed{v.Name, v.Name})
			}
			return out, err
		},
		ensurePhase: dd.PhaseVolume,
	},
}

// containerSpec is a small container of owner o in role that runs SleepCommand with network none.
func containerSpec(h Harness, o dd.Owner, role string) dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: dd.Name(o, role, ""), Owner: o, Role: role, Image: h.Image, Cmd: SleepCommand,
		Resources: dd.Resources{MemoryBytes: 32 << 20, NanoCPUs: 250_000_000, PIDs: 16},
	}
}

// volumeSpec is a 1 MiB tmpfs workspace volume of owner o.
func volumeSpec(o dd.Owner, name string) dd.VolumeSpec {
	return dd.VolumeSpec{Name: name, Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20}
}

func ownerMatch(o dd.Owner) map[string]string {
	return map[string]string{dsv1alpha1.LabelUID: o.UID}
}
