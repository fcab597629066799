package egress

import (
	"context"
	"net/netip"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// SandboxSources maps a connecting address to the Isolated Sandbox whose running container holds it. The
// container found last for an address is remembered and checked again at each connection (still running,
// still at that address), so that an address Docker gave to another container is never judged by the old
// owner's list.
type SandboxSources struct {
	driver dd.Driver
	reader client.Reader

	mu    sync.Mutex
	known map[netip.Addr]string // address -> container name
}

func (s *SandboxSources) Lookup(ctx context.Context, ip netip.Addr) (Source, bool) {
	c, ok := s.container(ctx, ip)
	if !ok {
		return Source{}, false
	}
	owner, _, _ := dd.OwnerFromLabels(c.Labels)
	sbx := &dsv1alpha1.Sandbox{}
	if err := s.reader.Get(ctx, types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}, sbx); err != nil ||
		string(sbx.UID) != owner.UID || sbx.Spec.Network.Mode != dsv1alpha1.NetworkIsolated {
		return Source{}, false
	}
	allow, err := ParseAllowlist(sbx.Spec.Network.Allow)
	if err != nil {
		// The API server validated the list; one it passed that the proxy cannot read permits nothing.
		return Source{}, false
	}
	return Source{Namespace: sbx.Namespace, Name: sbx.Name, Allow: allow}, true
}

// container is the running container of this node at ip, from memory when Docker confirms it.
func (s *SandboxSources) container(ctx context.Context, ip netip.Addr) (dd.ContainerInfo, bool) {
	s.mu.Lock()
	name, ok := s.known[ip]
	s.mu.Unlock()
	if ok {
		if c, err := s.driver.ObserveContainer(ctx, name); err == nil && holds(c, ip) {
			return c, true
		}
	}
	containers, err := s.driver.ListContainers(ctx, nil)
	if err != nil {
		return dd.ContainerInfo{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.known)
	var found dd.ContainerInfo
	for _, c := range containers {
		if a, err := netip.ParseAddr(c.IP); err == nil && c.State == dd.StateRunning {
			s.known[a] = c.Name
			if a == ip {
				found = c
			}
		}
	}
	return found, found.Exists
}

func holds(c dd.ContainerInfo, ip netip.Addr) bool {
	return c.Exists && c.State == dd.StateRunning && c.IP == ip.String()
}

// NewSandboxSources finds Sandboxes (read through reader) by the addresses of their containers on driver,
// the node's Docker daemon.
func NewSandboxSources(driver dd.Driver, reader client.Reader) *SandboxSources {
	return &SandboxSources{driver: driver, reader: reader, known: map[netip.Addr]string{}}
}
