package agent

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/hostfirewall"
)

// hostFirewall keeps the host firewall table installed while the agent runs (docs/egress.md, "The host"),
// leader or not: it guards the host, whatever agent acts for the node. It runs on every agent of the
// machine, so it removes the table at the end only when no Dockside bridge is left to guard.
type hostFirewall struct {
	port uint16
	log  logr.Logger
}

func (f *hostFirewall) config() hostfirewall.Config {
	return hostfirewall.Config{BridgePrefix: dd.BridgePrefix, ProxyPrefix: dd.BridgeProxied, ProxyPort: f.port,
		ClosedPrefixes: []string{dd.BridgeProxied, dd.BridgeClosed}}
}

// Start installs the table, waits for the agent to stop, and then removes it when it guards nothing.
func (f *hostFirewall) Start(ctx context.Context) error {
	err := hostfirewall.Install(f.config())
	switch {
	case errors.Is(err, hostfirewall.ErrNoPrivilege):
		f.log.Error(err, "HOST FIREWALL NOT INSTALLED: sandboxes can reach every port of this host through their bridges' gateways; "+
			"give the agent CAP_NET_ADMIN (docs/deploy.md) or pass --host-firewall=false to silence this")
	case err != nil:
		return err
	default:
		f.log.Info("Host firewall installed: Dockside bridges reach the host only at the egress proxy", "proxyPort", f.port)
	}
	<-ctx.Done()
	if err == nil && !bridgesLeft() {
		if err := hostfirewall.Remove(f.config()); err != nil {
			f.log.Error(err, "Removing the host firewall table")
		}
	}
	return nil
}

// NeedLeaderElection is false: the host is guarded from start-up on, before this agent leads its node.
func (f *hostFirewall) NeedLeaderElection() bool { return false }

// bridgesLeft tells whether a Dockside bridge exists on the host (an unknown answer counts as yes).
func bridgesLeft() bool {
	ifaces, err := net.Interfaces()
	if err != nil {
		return true
	}
	for _, i := range ifaces {
		if strings.HasPrefix(i.Name, dd.BridgePrefix) {
			return true
		}
	}
	return false
}
