package egress

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestStopClosesTunnels(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed)
	h.name("echo.test", "127.0.0.1")
	resp, c, br := h.connect(fmt.Sprintf("echo.test:%d", echo))
	if resp.StatusCode != 200 {
		t.Fatalf("got %s", resp.Status)
	}
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}

	h.proxy.Stop()
	select {
	case err := <-h.served:
		h.served <- err // for the harness's cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Stop")
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("read on a stopped tunnel: %v, want EOF", err)
	}
}

func TestOpenAndClose(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed) // its own listener is not used here; it provides the fakes
	h.name("echo.test", "127.0.0.1")
	p := h.proxy

	if _, ok := p.Addr(loopback); ok {
		t.Fatal("an address before Open")
	}
	if err := p.Open(loopback); err != nil {
		t.Fatal(err)
	}
	addr, ok := p.Addr(loopback)
	if !ok || addr.Addr() != loopback || addr.Port() == 0 {
		t.Fatalf("Addr = %v, %v", addr, ok)
	}
	if err := p.Open(loopback); err != nil {
		t.Fatal(err)
	}
	if again, _ := p.Addr(loopback); again != addr {
		t.Fatalf("a second Open moved the listener from %v to %v", addr, again)
	}
	h.addr = addr.String()
	if resp, _, _ := h.connect(fmt.Sprintf("echo.test:%d", echo)); resp.StatusCode != 200 {
		t.Fatalf("through Open's listener: %s", resp.Status)
	}

	p.Close(loopback)
	p.Close(loopback)
	if _, ok := p.Addr(loopback); ok {
		t.Fatal("an address after Close")
	}
	if c, err := net.Dial("tcp", addr.String()); err == nil {
		c.Close()
		t.Fatal("still listening after Close")
	}
	p.Close(netip.MustParseAddr("127.0.0.9")) // never opened

	// After Stop, Open starts again.
	p.Stop()
	h.served <- <-h.served
	if err := p.Open(loopback); err != nil {
		t.Fatal(err)
	}
	addr, _ = p.Addr(loopback)
	h.addr = addr.String()
	if resp, _, _ := h.connect(fmt.Sprintf("echo.test:%d", echo)); resp.StatusCode != 200 {
		t.Fatalf("after a Stop and an Open: %s", resp.Status)
	}
}

func TestKeepServesExactlyTheGatewaysListed(t *testing.T) {
	expectNoLeak(t)
	h := newHarness(t, allowed)
	echo := echoServer(t)
	h.name("echo.test", "127.0.0.1")
	// One request through the harness's own listener first: its Serve then runs in the session Keep opens in,
	// and the cleanup's Stop ends it.
	if resp, _, _ := h.connect(fmt.Sprintf("echo.test:%d", echo)); resp.StatusCode != 200 {
		t.Fatalf("through the harness's listener: %s", resp.Status)
	}
	p := h.proxy
	other := netip.MustParseAddr("127.0.0.2")

	p.Keep([]netip.Addr{loopback, other})
	for _, gw := range []netip.Addr{loopback, other} {
		if _, ok := p.Addr(gw); !ok {
			t.Fatalf("%v not served after Keep listed it", gw)
		}
	}
	p.Keep([]netip.Addr{other})
	if _, ok := p.Addr(loopback); ok {
		t.Fatal("a gateway Keep no longer lists is still served")
	}
	if _, ok := p.Addr(other); !ok {
		t.Fatal("a gateway Keep still lists was let go")
	}
	p.Keep(nil)
	if _, ok := p.Addr(other); ok {
		t.Fatal("served after Keep(nil)")
	}
}
