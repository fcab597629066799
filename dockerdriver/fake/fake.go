// Package fake is an in-memory dockerdriver.Driver that behaves like Docker as far as the controllers can
// tell (container state machine, name conflicts, networks, volumes, events, exec deadlines and output
// caps, tmpfs volumes that lose their content when no running container mounts them), with fault
// injection for the failures the controllers must survive. Controllers' envtest suites use it.
package fake

import (
	"context"
	"sync"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Driver is the fake. The zero value is not usable; call New.
type Driver struct {
	node string

	mu          sync.Mutex
	images      map[string]dd.ImageInfo
	registry    map[string]RegistryImage // what pulls can fetch, by reference
	unpacking   map[string]int64         // what the pulls running have unpacked so far, by reference
	networks    map[string]*network
	volumes     map[string]*volume
	containers  map[string]*container // by name
	nextID      int
	faults      map[Op][]fault
	calls       map[Op]int
	unavailable bool
	execHandler ExecHandler
	execs       map[string]*supervised // supervised execs by ID, until their container is removed
	nextExec    int
	streamExec  StreamExecHandler
	streams     []*stream
	storage     dd.StorageInfo // what docker info would report; see SetStorage
	noSeccomp   bool           // the daemon applies no seccomp profile; see SetSeccomp
	noInit      bool           // the daemon has no init binary; see SetInit
	runtimes    []string       // the OCI runtimes it offers, sorted; see SetRuntimes
	hostMemory  int64          // docker info's MemTotal; see SetHostMemory
	hostCPUs    int            // docker info's NCPU; see SetHostCPUs
}

var _ dd.Driver = (*Driver)(nil)

// New returns an empty fake daemon for the agent of node.
func New(node string) *Driver {
	return &Driver{
		node:        node,
		images:      map[string]dd.ImageInfo{},
		registry:    map[string]RegistryImage{},
		unpacking:   map[string]int64{},
		networks:    map[string]*network{},
		volumes:     map[string]*volume{},
		containers:  map[string]*container{},
		execs:       map[string]*supervised{},
		faults:      map[Op][]fault{},
		calls:       map[Op]int{},
		execHandler: func(context.Context, string, dd.ExecRequest) ExecOutput { return ExecOutput{} },
		streamExec:  func(context.Context, string, dd.StreamExecRequest) int { return 0 },
		storage:     dd.StorageInfo{Driver: "overlay2", BackingFS: "extfs"}, // Docker's most common setup
		hostMemory:  DefaultHostMemory,
		hostCPUs:    DefaultHostCPUs,
		runtimes:    []string{"runc"}, // what every Docker offers
	}
}

// Node is the node name the fake labels and filters by.
func (f *Driver) Node() string { return f.node }

// AddImage makes ref present locally, as if built or imported. info.Exists is set for you.
func (f *Driver) AddImage(ref string, info dd.ImageInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info.Exists = true
	if info.ID == "" {
		info.ID = "sha256:" + ref
	}
	f.images[ref] = info
}

// Ping answers like a healthy daemon unless made unavailable.
func (f *Driver) Ping(ctx context.Context) (dd.Version, error) {
	return call(f, ctx, OpPing, "", func() (dd.Version, error) {
		return dd.Version{Server: "fake", APIVersion: "1.41"}, nil
	})
}

// InspectImage reports an image added with AddImage; others are absent.
func (f *Driver) InspectImage(ctx context.Context, ref string) (dd.ImageInfo, error) {
	return call(f, ctx, OpInspectImage, ref, func() (dd.ImageInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.images[ref], nil
	})
}

// owns tells whether labels mark an object of this fake's node.
func (f *Driver) owns(labels map[string]string) bool {
	return dd.Owned(labels, f.node)
}

// matches tells whether an object of this node has all the labels of match.
func (f *Driver) matches(labels, match map[string]string) bool {
	if !f.owns(labels) {
		return false
	}
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// byNameOrID finds an object by its name (the key of objects) or by its whole ID, as Docker does; the
// real driver refuses the ID prefixes Docker would also match, so the fake has none to offer.
func byNameOrID[O any](objects map[string]*O, ref string, id func(*O) string) (*O, bool) {
	if o, ok := objects[ref]; ok {
		return o, true
	}
	for _, o := range objects {
		if id(o) == ref {
			return o, true
		}
	}
	return nil, false
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
