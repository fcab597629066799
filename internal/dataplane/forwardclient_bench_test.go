package dataplane

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/dockside-dev/dockside/internal/dataplane/forwardclient"
)

// BenchmarkForwardedGETs measures one HTTP GET to a port of a Sandbox through the data plane's port-forward
// (the fake driver, loopback): "session-per-request" opens a session for each (the E2B gateway before it
// kept them), "kept-session" opens a pair of streams per connection in one session with keep-alive
// connections (the gateway's port pool, internal/e2b/portpool.go), "direct" is the port without a forward.
// docs/e2b.md records the figures.
func BenchmarkForwardedGETs(b *testing.B) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	b.Cleanup(app.Close)
	_, portText, _ := net.SplitHostPort(app.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	d, _ := runningPrimary(b)
	sbx := primarySandbox()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		servePortForward(w, r, loopbackIP{d}, sbx)
	}))
	b.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/portforward")
	dialer, err := forwardclient.Dialer(&rest.Config{Host: srv.URL}, u, true)
	if err != nil {
		b.Fatal(err)
	}
	get := func(b *testing.B, tr *http.Transport) {
		b.Helper()
		resp, err := (&http.Client{Transport: tr}).Get("http://sbx/")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	b.Run("session-per-request", func(b *testing.B) {
		for b.Loop() {
			var s *forwardclient.Session
			tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var err error
				if s, err = forwardclient.Open(ctx, dialer); err != nil {
					return nil, err
				}
				return s.Dial(port)
			}}
			get(b, tr)
			_ = s.Close()
		}
	})
	b.Run("kept-session", func(b *testing.B) {
		s, err := forwardclient.Open(b.Context(), dialer)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return s.Dial(port) }}
		defer tr.CloseIdleConnections()
		for b.Loop() {
			get(b, tr)
		}
	})
	b.Run("direct", func(b *testing.B) {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "tcp", app.Listener.Addr().String())
		}}
		defer tr.CloseIdleConnections()
		for b.Loop() {
			get(b, tr)
		}
	})
}
