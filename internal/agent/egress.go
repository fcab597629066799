package agent

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/controller/sandbox"
	"github.com/dockside-dev/dockside/internal/egress"
)

// DefaultEgressProxyPort is the port of the egress proxy on the gateways of Isolated bridges.
const DefaultEgressProxyPort = 3128

// newEgressProxy is the node's egress proxy (docs/egress.md): it knows the Isolated Sandboxes of the node by
// their containers' addresses, refuses what their lists and the node's policy do not permit, and tells the
// Sandbox so in an Event.
func newEgressProxy(opts Options, driver dd.Driver, reader client.Reader, recorder events.EventRecorder, log logr.Logger) (*egress.Proxy, error) {
	pool, err := netip.ParsePrefix(opts.TopologyPool)
	if err != nil {
		return nil, err
	}
	refusals := &refusalEvents{reader: reader, recorder: recorder, every: 30 * time.Second, last: map[types.NamespacedName]time.Time{}}
	return &egress.Proxy{
		Port:      opts.EgressProxyPort,
		Policy:    egress.Policy{Permit: opts.EgressPermit, Never: []netip.Prefix{pool}, HostAddrs: (&hostAddrs{every: 10 * time.Second}).get},
		Sources:   &sandboxSources{driver: driver, reader: reader, known: map[netip.Addr]string{}},
		OnRefused: refusals.record,
		Log:       log.WithName("egress"),
	}, nil
}

// hostAddrs are the addresses of the host's interfaces: the proxy runs in the host's network namespace, so
// a connection to any of them would reach the host itself. The policy asks for every address it judges, so
// they are read again only every so often (a bridge made since is private anyway, and refused as such).
type hostAddrs struct {
	every time.Duration

	mu    sync.Mutex
	at    time.Time
	addrs []netip.Addr
}

func (h *hostAddrs) get() []netip.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.at) < h.every {
		return h.addrs
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return h.addrs // the last known set: failing open here would let the host be reached
	}
	h.addrs, h.at = h.addrs[:0:0], time.Now()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			h.addrs = append(h.addrs, p.Addr())
		}
	}
	return h.addrs
}

// sandboxSources maps a connecting address to the Isolated Sandbox whose running container holds it. The
// container found last for an address is remembered and checked again at each connection (still running,
// still at that address), so that an address Docker gave to another container is never judged by the old
// owner's list.
type sandboxSources struct {
	driver dd.Driver
	reader client.Reader

	mu    sync.Mutex
	known map[netip.Addr]string // address -> container name
}

func (s *sandboxSources) Lookup(ctx context.Context, ip netip.Addr) (egress.Source, bool) {
	c, ok := s.container(ctx, ip)
	if !ok {
		return egress.Source{}, false
	}
	owner, _, _ := dd.OwnerFromLabels(c.Labels)
	sbx := &dsv1alpha1.Sandbox{}
	if err := s.reader.Get(ctx, types.NamespacedName{Namespace: owner.Namespace, Name: owner.Name}, sbx); err != nil ||
		string(sbx.UID) != owner.UID || sbx.Spec.Network.Mode != dsv1alpha1.NetworkIsolated {
		return egress.Source{}, false
	}
	allow, err := egress.ParseAllowlist(sbx.Spec.Network.Allow)
	if err != nil {
		// The API server validated the list; one it passed that the proxy cannot read permits nothing.
		return egress.Source{}, false
	}
	return egress.Source{Namespace: sbx.Namespace, Name: sbx.Name, Allow: allow}, true
}

// container is the running container of this node at ip, from memory when Docker confirms it.
func (s *sandboxSources) container(ctx context.Context, ip netip.Addr) (dd.ContainerInfo, bool) {
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

// refusalEvents tells a Sandbox that its egress was refused, in at most one Event per Sandbox per period,
// which counts the refusals it stands for: a program retrying in a loop must not flood the API server.
type refusalEvents struct {
	reader   client.Reader
	recorder events.EventRecorder
	every    time.Duration

	mu      sync.Mutex
	last    map[types.NamespacedName]time.Time
	pending map[types.NamespacedName]int
}

func (e *refusalEvents) record(src egress.Source, known bool, dest string, r *egress.Refusal) {
	if !known {
		return // not a Sandbox's: nothing to tell it; the proxy's metric counts it
	}
	key := types.NamespacedName{Namespace: src.Namespace, Name: src.Name}
	e.mu.Lock()
	if e.pending == nil {
		e.pending = map[types.NamespacedName]int{}
	}
	e.pending[key]++
	if time.Since(e.last[key]) < e.every {
		e.mu.Unlock()
		return
	}
	n := e.pending[key]
	e.last[key], e.pending[key] = time.Now(), 0
	e.mu.Unlock()

	sbx := &dsv1alpha1.Sandbox{}
	if err := e.reader.Get(context.Background(), key, sbx); err != nil {
		return
	}
	e.recorder.Eventf(sbx, nil, "Warning", "EgressRefused", "Connect",
		"egress to %s refused (%s): %s; %d refusal(s) since the last such Event", dest, r.Reason, r.Message, n)
}

// serveEgress stops the proxy when the agent stops, closing every listener and tunnel (a manager runnable;
// the Sandbox reconciler and the sweeper open and close its listeners).
func serveEgress(proxy *egress.Proxy) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		proxy.Stop()
		return nil
	})
}

// egressGateways is the proxy as the reconciler's EgressGateways: nil, not a nil pointer in an interface,
// when the agent serves no proxy.
func egressGateways(proxy *egress.Proxy) sandbox.EgressGateways {
	if proxy == nil {
		return nil
	}
	return proxy
}
