package agent

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/controller/sandbox"
	"github.com/dockside-dev/dockside/internal/egress"
)

// DefaultEgressProxyPort is the port of the egress proxy on the gateways of Isolated bridges.
const DefaultEgressProxyPort = 3128

// EgressLimits are the egress proxy's bounds (docs/egress.md, "Limits and timeouts"); a zero field takes the
// proxy's default.
type EgressLimits struct {
	MaxConns           int           // connections of the whole node
	MaxConnsPerSandbox int           // connections of one Sandbox, all its containers together
	IdleTimeout        time.Duration // a tunnel or forwarded request through which nothing moved that long ends
	MaxDuration        time.Duration // a tunnel or forwarded request ends that long after its request
}

// newEgressProxy is the node's egress proxy (docs/egress.md): it knows the Isolated Sandboxes of the node by
// their containers' addresses, refuses what their lists and the node's policy do not permit, and tells the
// Sandbox so in an Event.
func newEgressProxy(opts Options, driver dd.Driver, reader client.Reader, recorder events.EventRecorder, log logr.Logger) (*egress.Proxy, error) {
	pool, err := netip.ParsePrefix(opts.TopologyPool)
	if err != nil {
		return nil, fmt.Errorf("topology pool %q: %w", opts.TopologyPool, err)
	}
	refusals := egress.NewRefusalEvents(reader, recorder, 30*time.Second)
	return &egress.Proxy{
		Port:      opts.EgressProxyPort,
		Policy:    egress.Policy{Permit: opts.EgressPermit, AllowIPv6: opts.EgressIPv6, Never: []netip.Prefix{pool}, HostAddrs: egress.HostAddrs(10 * time.Second)},
		Sources:   egress.NewSandboxSources(driver, reader),
		OnRefused: refusals.Record,
		Log:       log.WithName("egress"),

		MaxConns:           opts.EgressLimits.MaxConns,
		MaxConnsPerSandbox: opts.EgressLimits.MaxConnsPerSandbox,
		IdleTimeout:        opts.EgressLimits.IdleTimeout,
		MaxDuration:        opts.EgressLimits.MaxDuration,
	}, nil
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
