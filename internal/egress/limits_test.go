package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestConnectionsPerSandboxAreLimited(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed, func(p *Proxy) { p.MaxConnsPerSandbox = 2 })
	h.name("echo.test", "127.0.0.1")
	target := fmt.Sprintf("echo.test:%d", echo)
	before := testutil.ToFloat64(requests.WithLabelValues(verdictRefused, ReasonBusy))

	resp, first, _ := h.connect(target)
	if resp.StatusCode != 200 {
		t.Fatalf("first: %s", resp.Status)
	}
	if resp, _, _ = h.connect(target); resp.StatusCode != 200 {
		t.Fatalf("second: %s", resp.Status)
	}
	resp, _, _ = h.connect(target)
	expectRefusal(t, resp, 503, ReasonBusy, "Dockside egress proxy refused CONNECT to "+target+
		": Sandbox team-a/sbx already has 2 connections open through the egress proxy, its limit")
	if got := h.refused(); len(got) != 1 || got[0].r.Reason != ReasonBusy || got[0].dest != target || !got[0].known {
		t.Fatalf("OnRefused got %+v", got)
	}
	if got := testutil.ToFloat64(requests.WithLabelValues(verdictRefused, ReasonBusy)); got != before+1 {
		t.Fatalf("busy count %v, want %v", got, before+1)
	}

	// Once a tunnel ends, its slot is free again.
	first.Close()
	eventually(t, "a slot is given back", func() bool {
		resp, c, _ := h.connect(target)
		defer c.Close()
		if resp.StatusCode != 200 {
			_, _ = io.Copy(io.Discard, resp.Body) // a tunnel's answer has no body: its "body" is the tunnel
		}
		return resp.StatusCode == 200
	})
}

func TestConnectionsOfTheProxyAreLimited(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed, func(p *Proxy) { p.MaxConns = 1 })
	h.name("echo.test", "127.0.0.1")
	target := fmt.Sprintf("echo.test:%d", echo)
	if resp, _, _ := h.connect(target); resp.StatusCode != 200 {
		t.Fatalf("first: %s", resp.Status)
	}
	resp, _, _ := h.connect(target)
	expectRefusal(t, resp, 503, ReasonBusy, "Dockside egress proxy refused CONNECT to "+target+
		": the egress proxy already has 1 connections open, its limit")
}

// One Sandbox holding all its connections, from several of its containers, is refused more, from memory;
// another Sandbox's requests go through meanwhile, without waiting for any of them to end.
func TestSandboxAtItsLimitDoesNotDelayAnother(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "served")
	}))
	t.Cleanup(web.Close)
	a1, a2, a3 := netip.MustParseAddr("127.0.0.11"), netip.MustParseAddr("127.0.0.12"), netip.MustParseAddr("127.0.0.13")
	b := netip.MustParseAddr("127.0.0.21")
	list, _ := ParseAllowlist(allowed)
	sandboxA, sandboxB := Source{Namespace: "team-a", Name: "a", Allow: list}, Source{Namespace: "team-b", Name: "b", Allow: list}
	sources := &countedSources{Sources: fakeSources{a1: sandboxA, a2: sandboxA, a3: sandboxA, b: sandboxB}}
	h := newHarness(t, allowed, func(p *Proxy) {
		p.Sources = sources
		p.MaxConnsPerSandbox = 2
	})
	h.name("echo.test", "127.0.0.1")
	h.name("web.test", "127.0.0.1")
	target := fmt.Sprintf("echo.test:%d", echo)
	connect := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"

	// Two of A's containers hold a tunnel each; its third container gets none.
	var held []net.Conn
	for _, src := range []netip.Addr{a1, a2} {
		resp, c, _ := h.sendFrom(src, connect)
		if resp.StatusCode != 200 {
			t.Fatalf("A's tunnel from %s: %s", src, resp.Status)
		}
		held = append(held, c)
	}
	lookups := sources.n.Load()
	for range 20 {
		resp, _, _ := h.sendFrom(a3, connect)
		expectRefusal(t, resp, 503, ReasonBusy, "Dockside egress proxy refused CONNECT to "+target+
			": Sandbox team-a/a already has 2 connections open through the egress proxy, its limit")
	}
	if got := sources.n.Load() - lookups; got > 2 {
		t.Errorf("20 refused connections of one address took %d lookups, want them charged from memory", got)
	}

	resp, _, _ := h.sendFrom(b, "GET http://web.test:"+port(web.URL)+"/ HTTP/1.1\r\nHost: web.test\r\n\r\n")
	if got := body(t, resp); resp.StatusCode != 200 || got != "served" {
		t.Fatalf("B got %s %q", resp.Status, got)
	}
	if resp, _, _ := h.sendFrom(b, connect); resp.StatusCode != 200 {
		t.Fatalf("B's tunnel: %s", resp.Status)
	}
	// A's tunnels were open all along.
	for _, c := range held {
		if _, err := io.WriteString(c, "still"); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 5)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "still" {
			t.Fatalf("A's tunnel: %q, %v", got, err)
		}
	}
}
