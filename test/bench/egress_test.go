package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/dockside-dev/dockside/internal/egress"
)

// The egress benchmark runs in the test process, on loopback only: a local web server, the egress proxy in
// front of it, and one client that fetches the same URLs straight and through the proxy.
const (
	egressLatencySamples = 1000 // small GETs of each kind
	egressWarmUp         = 20   // rounds of small GETs, not counted
	egressDownloads      = 7    // large downloads of each kind, after one round not counted
	egressDownloadMiB    = 256
	egressSmallBody      = "ok\n"
)

// egressSources knows 127.0.0.1 as an Isolated Sandbox with an empty allowlist, answering from memory. The
// agent's own Sources asks Docker whether a running container still holds the address (one inspect per
// connection) and reads the Sandbox from its cache; that lookup is not part of these figures, which are the
// proxy's own cost.
type egressSources struct{}

func (egressSources) Lookup(_ context.Context, ip netip.Addr) (egress.Source, bool) {
	return egress.Source{Namespace: "bench", Name: "egress"}, ip == netip.MustParseAddr("127.0.0.1")
}

// BenchmarkEgressProxy measures what the egress proxy adds to a connection: the latency of one small GET on a
// new connection, straight to a local server, forwarded by the proxy as plain HTTP, and through a CONNECT
// tunnel, in turns; and the throughput of a large download through a CONNECT tunnel against the same
// download straight from the server, in turns.
func BenchmarkEgressProxy(b *testing.B) {
	web := httptest.NewServer(egressHandler())
	defer web.Close()
	proxyAddr := serveEgressProxy(b)

	// One client per path, the same settings for all: a new connection for every request, so that each
	// proxied sample includes the proxy's per-connection work (read the request, decide, dial, relay).
	direct := egressClient(func(t *http.Transport) {})
	forwarded := egressClient(func(t *http.Transport) { t.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: proxyAddr}) })
	tunnelled := egressClient(func(t *http.Transport) { t.DialContext = dialThroughConnect(proxyAddr) })

	small := web.URL + "/small"
	get := func(c *http.Client) func() error {
		return func() error { return fetch(c, small, int64(len(egressSmallBody))) }
	}
	latency, err := inTurns(egressWarmUp, egressLatencySamples, get(direct), get(forwarded), get(tunnelled))
	if err != nil {
		b.Fatal(err)
	}
	record(b, group{
		Key: "egress-latency", Title: fmt.Sprintf("Egress proxy alone (source lookup stubbed), one small GET per new connection to a local server, %d of each in turns", egressLatencySamples),
		Baseline: "the same GET straight to the server",
		Figures: append(latencyFigures("plain HTTP forwarded", latency[1], latency[0]),
			latencyFigures("CONNECT tunnel", latency[2], latency[0])...),
	})

	large := web.URL + "/large"
	download := func(c *http.Client) func() error {
		return func() error { return fetch(c, large, egressDownloadMiB*mib) }
	}
	throughput, err := inTurns(1, egressDownloads, download(direct), download(tunnelled))
	if err != nil {
		b.Fatal(err)
	}
	record(b, group{
		Key: "egress-throughput", Title: fmt.Sprintf("Egress proxy alone, %d MiB download from a local server through a CONNECT tunnel, %d of each in turns", egressDownloadMiB, egressDownloads),
		Baseline: "the same download straight from the server",
		Figures: []figure{{Name: "throughput, median download", Unit: "MB/s",
			Dockside: downloadRate(percentile(throughput[1], 50)), Baseline: downloadRate(percentile(throughput[0], 50))}},
	})
}

// inTurns runs each of fns once per round, a different one first in each round so that neither the
// machine's load nor the order favours one, and returns how long each took; the first warmUp rounds are not
// counted.
func inTurns(warmUp, rounds int, fns ...func() error) ([][]time.Duration, error) {
	times := make([][]time.Duration, len(fns))
	for round := range warmUp + rounds {
		for k := range fns {
			i := (round + k) % len(fns)
			d, err := timed(fns[i])
			if err != nil {
				return nil, err
			}
			if round >= warmUp {
				times[i] = append(times[i], d)
			}
		}
	}
	return times, nil
}

// egressHandler answers /small with a few bytes and /large with egressDownloadMiB MiB, both with a length.
func egressHandler() http.Handler {
	chunk := make([]byte, mib)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/small", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(egressSmallBody)))
		_, _ = io.WriteString(w, egressSmallBody)
	})
	mux.HandleFunc("/large", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(egressDownloadMiB*mib))
		for range egressDownloadMiB {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	return mux
}

// serveEgressProxy serves an egress.Proxy on 127.0.0.1 that permits 127.0.0.1 (loopback is refused
// otherwise) to the one source egressSources knows, and stops it when the benchmark ends.
func serveEgressProxy(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	proxy := &egress.Proxy{
		Policy:  egress.Policy{Permit: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}},
		Sources: egressSources{},
		OnRefused: func(_ egress.Source, _ bool, dest string, r *egress.Refusal) {
			b.Errorf("the proxy refused %s: %s", dest, r.Error())
		},
	}
	served := make(chan error, 1)
	go func() { served <- proxy.Serve(l) }()
	b.Cleanup(func() {
		proxy.Stop()
		if err := <-served; err != nil {
			b.Errorf("egress proxy: %v", err)
		}
	})
	return l.Addr().String()
}

// egressClient is an HTTP client that opens a new connection for every request, changed by configure.
func egressClient(configure func(*http.Transport)) *http.Client {
	t := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	configure(t)
	return &http.Client{Transport: t, Timeout: time.Minute}
}

// dialThroughConnect opens every connection as a CONNECT tunnel through the proxy, as Go's Transport does
// for https URLs. Plain HTTP goes through the tunnel here, so that the figures are the proxy's and not TLS's:
// a handshake would cost the same with and without the proxy.
func dialThroughConnect(proxyAddr string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, proxyAddr)
		if err != nil {
			return nil, err
		}
		if err := connect(c, addr); err != nil {
			_ = c.Close()
			return nil, err
		}
		return c, nil
	}
}

// connect asks the proxy on c for a tunnel to addr and reads its answer.
func connect(c net.Conn, addr string) error {
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("CONNECT %s: %s (%s)", addr, resp.Status, resp.Header.Get("X-Dockside-Refusal"))
	case br.Buffered() > 0:
		return errors.New("the proxy sent bytes behind its CONNECT answer before the request")
	}
	return nil
}

// fetch GETs target and reads the whole body, failing on any status but 200 or any other length than want.
func fetch(client *http.Client, target string, want int64) error {
	resp, err := client.Get(target)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	// A read loop of our own: io.Copy to io.Discard would read in 8 KiB blocks whatever the buffer.
	buf := make([]byte, 256<<10)
	var got int64
	for {
		n, err := resp.Body.Read(buf)
		got += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("GET %s after %d bytes: %w", target, got, err)
		}
	}
	if got != want {
		return fmt.Errorf("GET %s: %d bytes, want %d", target, got, want)
	}
	return nil
}

// latencyFigures are p50 and p95 of proxied against direct, in milliseconds; the p50 notes what the proxy
// adds to each connection.
func latencyFigures(path string, proxied, direct []time.Duration) []figure {
	p50, d50 := percentile(proxied, 50), percentile(direct, 50)
	return []figure{
		{Name: "p50, " + path, Unit: "ms", Dockside: millis(p50), Baseline: millis(d50),
			Note: fmt.Sprintf("%+.2f ms per connection", float64(p50-d50)/float64(time.Millisecond))},
		{Name: "p95, " + path, Unit: "ms", Dockside: millis(percentile(proxied, 95)), Baseline: millis(percentile(direct, 95))},
	}
}

func millis(d time.Duration) *float64 { return num(float64(d) / float64(time.Millisecond)) }

// downloadRate is one download's size over d, in MB/s (10^6 bytes).
func downloadRate(d time.Duration) *float64 {
	return num(egressDownloadMiB * mib / 1e6 / d.Seconds())
}
