package egress

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestConnectionsPerSourceAreLimited(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed, func(p *Proxy) { p.MaxConnsPerSource = 2 })
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
		": 127.0.0.1 already has 2 connections open through the egress proxy, the limit per source")
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
