package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Everything here stays on loopback: names resolve through fakeResolver only, and fakeDialer refuses to dial
// anything but 127.0.0.1.

var loopback = netip.MustParseAddr("127.0.0.1")

type fakeSources map[netip.Addr]Source

func (f fakeSources) Lookup(_ context.Context, ip netip.Addr) (Source, bool) {
	s, ok := f[ip]
	return s, ok
}

// countedSources counts the lookups made through it.
type countedSources struct {
	Sources
	n atomic.Int64
}

func (c *countedSources) Lookup(ctx context.Context, ip netip.Addr) (Source, bool) {
	c.n.Add(1)
	return c.Sources.Lookup(ctx, ip)
}

// fakeResolver answers from a table and records every name it was asked. The proxy asks for absolute names
// (a trailing dot): a relative one is not found, as it would first go through the host's search domains.
type fakeResolver struct {
	names map[string][]netip.Addr
	mu    sync.Mutex
	asked []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	if addrs, ok := r.names[strings.TrimSuffix(host, ".")]; ok && strings.HasSuffix(host, ".") {
		return addrs, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// fakeDialer records every dial and dials only 127.0.0.1.
type fakeDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *fakeDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		return nil, fmt.Errorf("test dialer: %s is not 127.0.0.1", addr)
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func (d *fakeDialer) dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

type refusal struct {
	src   Source
	known bool
	dest  string
	r     Refusal
}

// harness is a Proxy serving on a loopback listener, with the fakes above and 127.0.0.1 known as the source
// "team-a/sbx" with the given list.
type harness struct {
	t        *testing.T
	proxy    *Proxy
	addr     string
	served   chan error
	resolver *fakeResolver
	dialer   *fakeDialer

	mu       sync.Mutex
	refusals []refusal
}

func newHarness(t *testing.T, allow []string, configure ...func(*Proxy)) *harness {
	t.Helper()
	list, err := ParseAllowlist(allow)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, served: make(chan error, 1), resolver: &fakeResolver{names: map[string][]netip.Addr{}}, dialer: &fakeDialer{}}
	h.proxy = &Proxy{
		Policy:   Policy{Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Sources:  fakeSources{loopback: {Namespace: "team-a", Name: "sbx", Allow: list}},
		Resolver: h.resolver,
		Dial:     h.dialer.dial,
		OnRefused: func(src Source, known bool, dest string, r *Refusal) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.refusals = append(h.refusals, refusal{src, known, dest, *r})
		},
	}
	for _, c := range configure {
		c(h.proxy)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = l.Addr().String()
	go func() { h.served <- h.proxy.Serve(l) }()
	t.Cleanup(func() {
		h.proxy.Stop()
		if err := <-h.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

func (h *harness) name(name string, addrs ...string) {
	for _, a := range addrs {
		h.resolver.names[name] = append(h.resolver.names[name], netip.MustParseAddr(a))
	}
}

func (h *harness) refused() []refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]refusal(nil), h.refusals...)
}

// send writes raw to a new connection to the proxy and reads the answer's header (the body is left to read).
func (h *harness) send(raw string) (*http.Response, net.Conn, *bufio.Reader) {
	h.t.Helper()
	return h.sendFrom(loopback, raw)
}

// dialFrom connects to the proxy from src, an address of 127.0.0.0/8, for 10 s at most.
func (h *harness) dialFrom(src netip.Addr) net.Conn {
	h.t.Helper()
	d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))}
	c, err := d.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// sendFrom is send from the source address src.
func (h *harness) sendFrom(src netip.Addr, raw string) (*http.Response, net.Conn, *bufio.Reader) {
	h.t.Helper()
	c := h.dialFrom(src)
	if _, err := io.WriteString(c, raw); err != nil {
		h.t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		h.t.Fatalf("answer to %q: %v", raw, err)
	}
	return resp, c, br
}

// connect asks for a tunnel to hostport and returns the answer and the connection.
func (h *harness) connect(hostport string) (*http.Response, net.Conn, *bufio.Reader) {
	h.t.Helper()
	return h.send(fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport))
}

// body reads an answer's whole body.
func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// expectRefusal checks an answer is the refusal it should be: status, header, and a one-line body naming
// Dockside.
func expectRefusal(t *testing.T, resp *http.Response, code int, reason, line string) {
	t.Helper()
	text := body(t, resp)
	if resp.StatusCode != code || resp.Header.Get("X-Dockside-Refusal") != reason || text != line+"\n" {
		t.Fatalf("got %d %q %q, want %d %q %q", resp.StatusCode, resp.Header.Get("X-Dockside-Refusal"), text, code, reason, line+"\n")
	}
}

// echoServer echoes every TCP connection on 127.0.0.1 until the test ends.
func echoServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// expectNoLeak, registered first, checks at the very end of a test that every goroutine it started is gone.
func expectNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines, %d before the test:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}
