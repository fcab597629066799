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
			return listOf(cs, err, func(c dd.ContainerInfo) listed { return listed{c.ID, c.Name} })
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
			return listOf(ns, err, func(n dd.NetworkInfo) listed { return listed{n.ID, n.Name} })
		},
		ensurePhase: dd.PhaseNetwork,
	},
	Volume: {
		ensure: func(ctx context.Context, h Harness, o dd.Owner, name string) (string, error) {
			// A 1 MiB tmpfs workspace, as a Sandbox's.
			info, err := h.Driver.EnsureVolume(ctx, dd.VolumeSpec{Name: name, Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
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
			return listOf(vs, err, func(v dd.VolumeInfo) listed { return listed{v.Name, v.Name} })
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

// listOf is what a list call returned, as listed objects.
func listOf[I any](items []I, err error, of func(I) listed) ([]listed, error) {
	out := make([]listed, 0, len(items))
	for _, it := range items {
		out = append(out, of(it))
	}
	return out, err
}

func ownerMatch(o dd.Owner) map[string]string {
	return map[string]string{dsv1alpha1.LabelUID: o.UID}
}
