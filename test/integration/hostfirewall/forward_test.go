//go:build integration

package hostfirewall_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/dockside-dev/dockside/internal/hostfirewall"
)

// TestForwardChainKeepsClosedBridgesIn routes between sandbox namespaces and an "outside" namespace through a
// "host" namespace that forwards (ip_forward is set in that namespace only). The sandboxes sit behind veths
// whose host ends are named like an Isolated (dsi-), a None (dsn-) and an Unrestricted (dsu-) bridge; the
// outside one behind a veth that is no Dockside bridge, like the host's eth0. Addresses are from 192.0.2.0/24
// and 198.51.100.0/24 and exist only in these namespaces.
func TestForwardChainKeepsClosedBridgesIn(t *testing.T) {
	untouchedHost(t)
	host := newNetNS(t)
	setSysctl(t, host, "net/ipv4/ip_forward", "1")
	isolated := sandboxBehind(t, host, "dsi-fwtest", "192.0.2.1/30", "192.0.2.2/30")
	closed := sandboxBehind(t, host, "dsn-fwtest", "192.0.2.5/30", "192.0.2.6/30")
	open := sandboxBehind(t, host, "dsu-fwtest", "192.0.2.9/30", "192.0.2.10/30")
	outside := sandboxBehind(t, host, "fwout-test", "198.51.100.1/30", "198.51.100.2/30")

	internet := fmt.Sprintf("198.51.100.2:%d", listen(t, outside, "198.51.100.2:0"))
	closedSandbox := fmt.Sprintf("192.0.2.6:%d", listen(t, closed, "192.0.2.6:0"))
	cfg := hostfirewall.Config{ProxyPort: 3128, NetNSFd: int(host.Fd())}

	t.Run("without the table the host routes every sandbox out", func(t *testing.T) {
		mustConnect(t, isolated, internet)
		mustConnect(t, closed, internet)
		mustConnect(t, open, internet)
		mustConnect(t, outside, closedSandbox)
	})

	if err := hostfirewall.Install(cfg); err != nil {
		t.Fatalf("install: %v", err)
	}
	expectTable(t, host, cfg)
	t.Run("with the table nothing leaves an Isolated or None bridge", func(t *testing.T) {
		mustBeDropped(t, isolated, internet) // forward rule 1
		mustBeDropped(t, closed, internet)   // forward rule 2
		// A connection from outside gets its SYN in, but the answer would leave the None bridge.
		mustBeDropped(t, outside, closedSandbox)
		mustConnect(t, open, internet) // Unrestricted bridges are not this chain's

		for i, prefix := range []string{"dsi-", "dsn-"} {
			if n := counted(t, host, hostfirewall.DefaultTable, hostfirewall.ForwardChainName, i); n == 0 {
				t.Errorf("the forward drop of %s bridges counted no packet", prefix)
			}
		}
		// None of these packets was addressed to the host: the input chain saw none of them.
		if n := counted(t, host, hostfirewall.DefaultTable, hostfirewall.ChainName, -1); n != 0 {
			t.Errorf("the input chain's drop counted %d packets, want 0", n)
		}
	})

	if err := hostfirewall.Remove(cfg); err != nil {
		t.Fatalf("remove: %v", err)
	}
	t.Run("after remove the host routes them out again", func(t *testing.T) {
		mustConnect(t, closed, internet)
		mustConnect(t, isolated, internet)
	})
}

// TestForwardChainLeavesTrafficInsideABridgeAlone puts two sandboxes on one bridge named like an Isolated one.
// Their traffic is bridged, not routed, yet with br_netfilter (which Docker loads, with bridge-nf-call-iptables
// on) their IPv4 frames pass the forward hook, with the bridge as both input and output interface. A probe
// table of the test's own counts them there, so the test shows both that the forward chain sees them and that
// its "oifname != ds*" lets them through.
func TestForwardChainLeavesTrafficInsideABridgeAlone(t *testing.T) {
	untouchedHost(t)
	host := newNetNS(t)
	callIptables, err := readSysctl(host, "net/bridge/bridge-nf-call-iptables")
	if err != nil || callIptables != "1" {
		t.Skipf("bridged frames do not pass the IP hooks here (br_netfilter not loaded, or bridge-nf-call-iptables "+
			"off in a new namespace): %q, %v", callIptables, err)
	}
	setSysctl(t, host, "net/ipv4/ip_forward", "1")
	ip(t, host, nil, "link", "add", "dsi-brtest", "type", "bridge")
	ip(t, host, nil, "link", "set", "dsi-brtest", "up")
	a := bridgePort(t, host, "dsi-brtest", "vethbr-a", "192.0.2.17/28")
	b := bridgePort(t, host, "dsi-brtest", "vethbr-b", "192.0.2.18/28")
	peer := fmt.Sprintf("192.0.2.18:%d", listen(t, b, "192.0.2.18:0"))
	addForwardProbe(t, host, "dsi-brtest")

	cfg := hostfirewall.Config{ProxyPort: 3128, NetNSFd: int(host.Fd())}
	if err := hostfirewall.Install(cfg); err != nil {
		t.Fatalf("install: %v", err)
	}
	mustConnect(t, a, peer)
	if n := counted(t, host, probeTable, hostfirewall.ForwardChainName, 0); n == 0 {
		t.Error("no bridged frame passed the forward hook with the bridge as input and output: the test proves nothing")
	}
	if n := counted(t, host, hostfirewall.DefaultTable, hostfirewall.ForwardChainName, 0); n != 0 {
		t.Errorf("the forward drop of dsi- bridges counted %d packets inside one bridge, want 0", n)
	}
}

const probeTable = "fwprobe"

// addForwardProbe adds to ns a table of the test's own whose forward chain counts what enters and leaves
// through bridge: iifname "<bridge>" oifname "<bridge>" counter.
func addForwardProbe(t *testing.T, ns *os.File, bridge string) {
	t.Helper()
	c := conn(t, ns)
	table := c.AddTable(&nftables.Table{Name: probeTable, Family: nftables.TableFamilyINet})
	policy := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{Name: hostfirewall.ForwardChainName, Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &policy})
	name := make([]byte, 16) // the whole name with its NUL padding: this exact interface, not a prefix
	copy(name, bridge)
	c.AddRule(&nftables.Rule{Table: table, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
		&expr.Counter{},
	}})
	if err := c.Flush(); err != nil {
		t.Fatalf("add the probe table: %v", err)
	}
}

// sandboxBehind makes a namespace joined to host by a veth whose host end is hostEnd with hostAddr; the other
// end is the namespace's eth0 with addr, and its default route goes through hostAddr.
func sandboxBehind(t *testing.T, host *os.File, hostEnd, hostAddr, addr string) *os.File {
	t.Helper()
	ns := newNetNS(t)
	ip(t, host, []*os.File{ns}, "link", "add", hostEnd, "type", "veth", "peer", "name", "eth0", "netns", "/proc/self/fd/3")
	ip(t, host, nil, "addr", "add", hostAddr, "dev", hostEnd)
	ip(t, host, nil, "link", "set", hostEnd, "up")
	ip(t, ns, nil, "addr", "add", addr, "dev", "eth0")
	ip(t, ns, nil, "link", "set", "eth0", "up")
	ip(t, ns, nil, "route", "add", "default", "via", strings.Split(hostAddr, "/")[0])
	return ns
}

// bridgePort makes a namespace whose eth0 (with addr) is the peer of a veth port of bridge in host.
func bridgePort(t *testing.T, host *os.File, bridge, port, addr string) *os.File {
	t.Helper()
	ns := newNetNS(t)
	ip(t, host, []*os.File{ns}, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", "/proc/self/fd/3")
	ip(t, host, nil, "link", "set", port, "master", bridge)
	ip(t, host, nil, "link", "set", port, "up")
	ip(t, ns, nil, "addr", "add", addr, "dev", "eth0")
	ip(t, ns, nil, "link", "set", "eth0", "up")
	return ns
}

// setSysctl writes a sysctl of ns. The files under /proc/sys/net belong to the network namespace of the thread
// that opens them, so this changes ns's value and never the machine's.
func setSysctl(t *testing.T, ns *os.File, key, value string) {
	t.Helper()
	err := inNetNS(ns, func() error {
		return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0)
	})
	if err != nil {
		t.Fatalf("sysctl %s=%s in the test's namespace: %v", key, value, err)
	}
	if got, err := readSysctl(ns, key); err != nil || got != value {
		t.Fatalf("sysctl %s reads %q, %v after writing %q", key, got, err, value)
	}
}

func readSysctl(ns *os.File, key string) (string, error) {
	var value string
	err := inNetNS(ns, func() error {
		b, err := os.ReadFile(filepath.Join("/proc/sys", key))
		value = strings.TrimSpace(string(b))
		return err
	})
	return value, err
}
