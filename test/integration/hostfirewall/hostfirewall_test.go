//go:build integration

// Package hostfirewall_test installs the host firewall table in network namespaces the tests make, never in
// the host's, and checks both what the kernel holds and what it lets through.
package hostfirewall_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"

	"github.com/dockside-dev/dockside/internal/hostfirewall"
	"github.com/dockside-dev/dockside/internal/testutil/nftrules"
)

func TestInstallAndRemoveInANamespaceOfItsOwn(t *testing.T) {
	untouchedHost(t)
	ns := newNetNS(t)
	cfg := hostfirewall.Config{ProxyPort: 3128, NetNSFd: int(ns.Fd())}
	expectInstalled(t, cfg, false)

	if err := hostfirewall.Install(cfg); err != nil {
		t.Fatalf("install: %v", err)
	}
	expectTable(t, ns, cfg)
	expectInstalled(t, cfg, true)

	if err := hostfirewall.Install(cfg); err != nil {
		t.Fatalf("install again: %v", err)
	}
	expectTable(t, ns, cfg)

	// A table left by an agent with another proxy port is replaced, not added to.
	moved := cfg
	moved.ProxyPort = 8080
	if err := hostfirewall.Install(moved); err != nil {
		t.Fatalf("install with another port: %v", err)
	}
	expectTable(t, ns, moved)

	if err := hostfirewall.Remove(cfg); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if tables := tableNames(t, ns); slices.Contains(tables, "inet dockside") {
		t.Errorf("after remove the namespace still has the table: %v", tables)
	}
	expectInstalled(t, cfg, false)
	if err := hostfirewall.Remove(cfg); err != nil {
		t.Errorf("remove of an absent table: %v", err)
	}
}

// TestTableKeepsSandboxesOffTheHost joins a "host" namespace to two "sandbox" namespaces by veth pairs whose
// host ends are named like Dockside's bridges, one that may use the proxy (dsi-) and one that may not (dsn-),
// and checks each rule by what it lets through. The addresses are from 192.0.2.0/24 (TEST-NET-1) and exist only
// in these namespaces.
func TestTableKeepsSandboxesOffTheHost(t *testing.T) {
	untouchedHost(t)
	host, proxied, closed := newNetNS(t), newNetNS(t), newNetNS(t)
	ip(t, host, []*os.File{proxied}, "link", "add", "dsi-fwtest", "type", "veth", "peer", "name", "eth0", "netns", "/proc/self/fd/3")
	ip(t, host, []*os.File{closed}, "link", "add", "dsn-fwtest", "type", "veth", "peer", "name", "eth0", "netns", "/proc/self/fd/3")
	ip(t, host, nil, "addr", "add", "192.0.2.1/30", "dev", "dsi-fwtest")
	ip(t, host, nil, "addr", "add", "192.0.2.5/30", "dev", "dsn-fwtest")
	ip(t, host, nil, "link", "set", "dsi-fwtest", "up")
	ip(t, host, nil, "link", "set", "dsn-fwtest", "up")
	ip(t, proxied, nil, "addr", "add", "192.0.2.2/30", "dev", "eth0")
	ip(t, proxied, nil, "link", "set", "eth0", "up")
	ip(t, closed, nil, "addr", "add", "192.0.2.6/30", "dev", "eth0")
	ip(t, closed, nil, "link", "set", "eth0", "up")
	// Through its gateway the closed sandbox can also address the host's other address, 192.0.2.1.
	ip(t, closed, nil, "route", "add", "default", "via", "192.0.2.5")

	proxyPort, otherPort := listen(t, host, "0.0.0.0:0"), listen(t, host, "0.0.0.0:0")
	sandboxPort := listen(t, closed, "192.0.2.6:0")
	cfg := hostfirewall.Config{ProxyPort: proxyPort, NetNSFd: int(host.Fd())}

	proxyViaGateway := fmt.Sprintf("192.0.2.1:%d", proxyPort)
	otherViaGateway := fmt.Sprintf("192.0.2.1:%d", otherPort)
	proxyOnDsn := fmt.Sprintf("192.0.2.5:%d", proxyPort)
	sandbox := fmt.Sprintf("192.0.2.6:%d", sandboxPort)

	t.Run("without the table everything connects", func(t *testing.T) {
		mustConnect(t, proxied, proxyViaGateway)
		mustConnect(t, proxied, otherViaGateway)
		mustConnect(t, closed, proxyOnDsn)
		mustConnect(t, closed, proxyViaGateway)
		mustConnect(t, host, sandbox)
	})

	if err := hostfirewall.Install(cfg); err != nil {
		t.Fatalf("install: %v", err)
	}
	t.Run("with the table only the proxy and replies get through", func(t *testing.T) {
		mustConnect(t, proxied, proxyViaGateway) // rule 2
		mustConnect(t, host, sandbox)            // rule 1: the sandbox's answer comes in on dsn-fwtest
		blocked := 0
		for _, c := range []struct {
			from *os.File
			addr string
		}{{proxied, otherViaGateway}, {closed, proxyOnDsn}, {closed, proxyViaGateway}} {
			mustBeDropped(t, c.from, c.addr) // rule 3
			blocked++
		}
		if packets := counted(t, host, hostfirewall.DefaultTable, hostfirewall.ChainName, -1); packets < uint64(blocked) {
			t.Errorf("the drop rule counted %d packets, want at least one SYN for each of %d connections", packets, blocked)
		}
	})

	if err := hostfirewall.Remove(cfg); err != nil {
		t.Fatalf("remove: %v", err)
	}
	t.Run("after remove everything connects again", func(t *testing.T) {
		mustConnect(t, closed, proxyOnDsn)
		mustConnect(t, proxied, otherViaGateway)
	})
}

// expectInstalled checks what Installed tells of cfg's namespace.
func expectInstalled(t *testing.T, cfg hostfirewall.Config, want bool) {
	t.Helper()
	if got, err := hostfirewall.Installed(cfg); err != nil || got != want {
		t.Errorf("Installed = %v, %v; want %v", got, err, want)
	}
}

// expectTable checks that ns holds cfg's table exactly: two base chains, input and forward, as the package
// promises, each with the rules Rules or ForwardRules describes, in order.
func expectTable(t *testing.T, ns *os.File, cfg hostfirewall.Config) {
	t.Helper()
	c := conn(t, ns)
	table := &nftables.Table{Name: hostfirewall.DefaultTable, Family: nftables.TableFamilyINet}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatalf("list chains: %v", err)
	}
	ours := map[string]*nftables.Chain{}
	for _, ch := range chains {
		if ch.Table.Name == table.Name {
			ours[ch.Name] = ch
		}
	}
	if len(ours) != 2 {
		t.Fatalf("table %s has %d chains, want 2 (%s and %s)", table.Name, len(ours), hostfirewall.ChainName, hostfirewall.ForwardChainName)
	}
	inputRules, err := hostfirewall.Rules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	forwardRules, err := hostfirewall.ForwardRules(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		name  string
		hook  *nftables.ChainHook
		rules [][]expr.Any
	}{
		{hostfirewall.ChainName, nftables.ChainHookInput, inputRules},
		{hostfirewall.ForwardChainName, nftables.ChainHookForward, forwardRules},
	} {
		ch := ours[want.name]
		if ch == nil || ch.Type != nftables.ChainTypeFilter ||
			ch.Hooknum == nil || *ch.Hooknum != *want.hook ||
			ch.Priority == nil || *ch.Priority != *nftables.ChainPriorityFilter ||
			ch.Policy == nil || *ch.Policy != nftables.ChainPolicyAccept {
			t.Errorf("chain %+v, want %q: type filter hook %d priority filter policy accept", ch, want.name, *want.hook)
			continue
		}
		rules, err := c.GetRules(table, ch)
		if err != nil {
			t.Fatalf("list rules of %s: %v", want.name, err)
		}
		var got [][]expr.Any
		for _, r := range rules {
			got = append(got, zeroCounters(r.Exprs))
		}
		if !reflect.DeepEqual(got, want.rules) {
			t.Errorf("the kernel's chain %s holds %d rules:%s\nwant %d:%s", want.name, len(got), nftrules.Describe(got), len(want.rules), nftrules.Describe(want.rules))
		}
	}
}

// counted reads the packets counted by the rule at index i (negative: from the end) of a chain in ns.
func counted(t *testing.T, ns *os.File, tableName, chainName string, i int) uint64 {
	t.Helper()
	table := &nftables.Table{Name: tableName, Family: nftables.TableFamilyINet}
	rules, err := conn(t, ns).GetRules(table, &nftables.Chain{Name: chainName, Table: table})
	if i < 0 {
		i += len(rules)
	}
	if err != nil || i < 0 || i >= len(rules) {
		t.Fatalf("list rules of %s %s: %v (%d rules, want rule %d)", tableName, chainName, err, len(rules), i)
	}
	for _, e := range rules[i].Exprs {
		if c, ok := e.(*expr.Counter); ok {
			return c.Packets
		}
	}
	t.Fatalf("rule %d of %s %s has no counter", i, tableName, chainName)
	return 0
}

// untouchedHost checks at the end of the test that the host's network namespace has the tables and the
// ip_forward setting it had at the start: the tests work in namespaces of their own only.
func untouchedHost(t *testing.T) {
	t.Helper()
	before := tableNames(t, nil)
	forwardBefore, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if after := tableNames(t, nil); !slices.Equal(before, after) {
			t.Errorf("the host's nftables tables changed: before %v, after %v", before, after)
		}
		if after, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); err != nil || string(after) != string(forwardBefore) {
			t.Errorf("the host's ip_forward changed: before %q, after %q (%v)", forwardBefore, after, err)
		}
	})
}

// tableNames lists the tables of ns (nil: the host's namespace) as "family name", sorted.
func tableNames(t *testing.T, ns *os.File) []string {
	t.Helper()
	tables, err := conn(t, ns).ListTables()
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, fmt.Sprintf("%s %s", family(tb.Family), tb.Name))
	}
	slices.Sort(names)
	return names
}

func conn(t *testing.T, ns *os.File) *nftables.Conn {
	t.Helper()
	var opts []nftables.ConnOption
	if ns != nil {
		opts = append(opts, nftables.WithNetNSFd(int(ns.Fd())))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func family(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	}
	return fmt.Sprintf("family%d", f)
}

// listen serves addr in ns until the test ends, accepting and closing every connection, and returns its port.
func listen(t *testing.T, ns *os.File, addr string) uint16 {
	t.Helper()
	var l net.Listener
	err := inNetNS(ns, func() (err error) {
		l, err = net.Listen("tcp4", addr)
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// dial connects from ns to addr within timeout.
func dial(ns *os.File, addr string, timeout time.Duration) error {
	return inNetNS(ns, func() error {
		c, err := net.DialTimeout("tcp4", addr, timeout)
		if err == nil {
			_ = c.Close()
		}
		return err
	})
}

// mustConnect allows a loaded machine plenty of time: a connection that may pass must pass.
func mustConnect(t *testing.T, from *os.File, addr string) {
	t.Helper()
	if err := dial(from, addr, 10*time.Second); err != nil {
		t.Errorf("connect to %s: %v, want a connection", addr, err)
	}
}

// mustBeDropped needs no long wait: a dropped SYN is never answered, however long one waits, so the short
// timeout decides nothing a slow machine could change. A refusal would mean the packet reached the host.
func mustBeDropped(t *testing.T, from *os.File, addr string) {
	t.Helper()
	err := dial(from, addr, 500*time.Millisecond)
	var netErr net.Error
	if err == nil || !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Errorf("connect to %s: %v, want a timeout (the SYN dropped)", addr, err)
	}
}

func zeroCounters(exprs []expr.Any) []expr.Any {
	for i, e := range exprs {
		if _, ok := e.(*expr.Counter); ok {
			exprs[i] = &expr.Counter{}
		}
	}
	return exprs
}
