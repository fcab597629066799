package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// tickServer writes one byte every 100 ms to every TCP connection on 127.0.0.1, reading nothing, until the
// test ends.
func tickServer(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for {
					select {
					case <-done:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := c.Write([]byte{'.'}); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		l.Close()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// readsUntilClosed reads c until it ends, within limit, and returns how long that took and how many bytes
// came.
func readsUntilClosed(t *testing.T, c net.Conn, r io.Reader, limit time.Duration) (time.Duration, int64) {
	t.Helper()
	start := time.Now()
	_ = c.SetDeadline(start.Add(limit))
	n, err := io.Copy(io.Discard, r)
	if isTimeout(err) {
		t.Fatalf("still open after %s (%d bytes)", limit, n)
	}
	return time.Since(start), n
}

func TestIdleTunnelIsClosed(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed, func(p *Proxy) { p.IdleTimeout = 300 * time.Millisecond })
	h.name("echo.test", "127.0.0.1")
	resp, c, br := h.connect(fmt.Sprintf("echo.test:%d", echo))
	if resp.StatusCode != 200 {
		t.Fatalf("got %s", resp.Status)
	}
	readsUntilClosed(t, c, br, 30*time.Second)
}

// Bytes flowing one way only keep a tunnel open past many idle timeouts: the quiet direction waits on the
// busy one.
func TestTunnelMovingOneWayStaysOpenUntilItsTotal(t *testing.T) {
	expectNoLeak(t)
	ticks := tickServer(t)
	h := newHarness(t, allowed, func(p *Proxy) {
		p.IdleTimeout = 2 * time.Second
		p.MaxDuration = 8 * time.Second
	})
	h.name("echo.test", "127.0.0.1")
	resp, c, br := h.connect(fmt.Sprintf("echo.test:%d", ticks))
	if resp.StatusCode != 200 {
		t.Fatalf("got %s", resp.Status)
	}
	took, n := readsUntilClosed(t, c, br, time.Minute)
	// Generous bounds: at least 2 idle timeouts, and a good part of the ticks of 8 s.
	if took < 4*time.Second || n < 20 {
		t.Fatalf("closed after %s and %d bytes, want it open until its total of 8 s", took, n)
	}
}

// A forwarded answer whose body stalls is cut at the idle timeout.
func TestStalledBodyIsCut(t *testing.T) {
	expectNoLeak(t)
	release := make(chan struct{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "start")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(web.Close)
	t.Cleanup(func() { close(release) })
	h := newHarness(t, allowed, func(p *Proxy) { p.IdleTimeout = 300 * time.Millisecond })
	h.name("web.test", "127.0.0.1")
	resp, c, _ := h.send("GET http://web.test:" + port(web.URL) + "/ HTTP/1.1\r\nHost: web.test\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("got %s", resp.Status)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(resp.Body)
	if isTimeout(err) || string(got) != "start" {
		t.Fatalf("got %q, %v; want the body cut after \"start\"", got, err)
	}
}
