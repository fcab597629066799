package hostfirewall

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// checkPeriod is how often a running agent makes sure its table is still there: something else may
// have removed it (a firewall service's reload, an operator's `nft flush ruleset`), and the host would stay
// open until the agent's next start.
const checkPeriod = 10 * time.Second

// Guard keeps the host firewall table installed while the agent runs (docs/egress.md, "The host"),
// leader or not: it guards the host, whatever agent acts for the node. Every agent of the host's network
// namespace guards the same table, so the last one to stop removes it, and only when no Dockside bridge is
// left to guard.
type Guard struct {
	Port uint16 // the egress proxy's, which Dockside's proxied bridges may reach
	Log  logr.Logger
}

func (f *Guard) config() Config {
	return Config{BridgePrefix: dd.BridgePrefix, ProxyPrefix: dd.BridgeProxied, ProxyPort: f.Port,
		ClosedPrefixes: []string{dd.BridgeProxied, dd.BridgeClosed}}
}

// Start installs the table, keeps it installed until the agent stops, and then removes it when it guards
// nothing and no other agent guards it.
func (f *Guard) Start(ctx context.Context) error {
	err := Install(f.config())
	switch {
	case errors.Is(err, ErrNoPrivilege):
		f.Log.Error(err, "HOST FIREWALL NOT INSTALLED: sandboxes can reach every port of this host through their bridges' gateways; "+
			"give the agent CAP_NET_ADMIN (docs/deploy.md) or pass --host-firewall=false to silence this")
		<-ctx.Done()
		return nil
	case err != nil:
		return err
	}
	f.Log.Info("Host firewall installed: Dockside bridges reach the host only at the egress proxy", "proxyPort", f.Port)
	guard, err := newGuardMark()
	if err != nil {
		// Without its mark this agent is invisible to the others: one of them may remove the table at its exit,
		// and the check below puts it back.
		f.Log.Error(err, "Marking this agent as a guard of the host firewall")
	}
	f.keep(ctx)
	if guard != nil {
		guard.close()
		if others, err := otherGuardMarks(); err != nil || others {
			return nil
		}
	}
	if !bridgesLeft() {
		if err := Remove(f.config()); err != nil {
			f.Log.Error(err, "Removing the host firewall table")
		}
	}
	return nil
}

// keep installs the table again whenever it is found missing, until ctx ends.
func (f *Guard) keep(ctx context.Context) {
	tick := time.NewTicker(checkPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		installed, err := Installed(f.config())
		if err != nil || installed {
			continue
		}
		if err := Install(f.config()); err != nil {
			f.Log.Error(err, "The host firewall table was gone and could not be installed again")
			continue
		}
		f.Log.Info("The host firewall table was gone: installed it again")
	}
}

// NeedLeaderElection is false: the host is guarded from start-up on, before this agent leads its node.
func (f *Guard) NeedLeaderElection() bool { return false }

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
