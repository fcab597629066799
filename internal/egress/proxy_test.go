package egress

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

var allowed = []string{"web.test", "tls.test", "echo.test", "meta.test", "both.test", "nxdomain.test", "closed.test", "169.254.169.254", "127.0.0.2"}

func port(u string) string {
	parsed, _ := url.Parse(u)
	return parsed.Port()
}

func TestForwardPlainHTTP(t *testing.T) {
	expectNoLeak(t)
	var mu sync.Mutex
	var seen *http.Request
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(r.Context())
		mu.Unlock()
		if r.URL.Path == "/chunked" {
			_, _ = io.WriteString(w, "one ") // a client that went away fails on its own side
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "two")
			return
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://evil.test/", http.StatusFound)
			return
		}
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Secret", "x")
		w.Header().Set("X-Resp", "1")
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello %s", b)
	}))
	t.Cleanup(web.Close)
	h := newHarness(t, allowed)
	h.name("web.test", "127.0.0.1")
	p := port(web.URL)
	before := testutil.ToFloat64(requests.WithLabelValues(verdictAllowed, reasonConnected))

	resp, _, _ := h.send("POST http://web.test:" + p + "/x HTTP/1.1\r\nHost: other.test\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\n" +
		"Proxy-Connection: keep-alive\r\nConnection: X-Hop\r\nX-Hop: 1\r\nX-Keep: 1\r\nContent-Length: 4\r\n\r\nbody")
	if got := body(t, resp); resp.StatusCode != 200 || got != "hello body" || !resp.Close {
		t.Fatalf("got %d %q close=%v", resp.StatusCode, got, resp.Close)
	}
	if resp.Header.Get("X-Resp") != "1" || resp.Header.Get("Keep-Alive") != "" || resp.Header.Get("Proxy-Secret") != "" {
		t.Fatalf("answer headers %v", resp.Header)
	}
	mu.Lock()
	if seen.Host != "web.test:"+p || seen.Header.Get("X-Keep") != "1" || seen.Header.Get("X-Hop") != "" ||
		seen.Header.Get("Proxy-Authorization") != "" || seen.Header.Get("Proxy-Connection") != "" || seen.Header.Get("User-Agent") != "" ||
		seen.RequestURI != "/x" {
		t.Fatalf("the server saw Host %q, URI %q, headers %v", seen.Host, seen.RequestURI, seen.Header)
	}
	mu.Unlock()
	if got := testutil.ToFloat64(requests.WithLabelValues(verdictAllowed, reasonConnected)); got != before+1 {
		t.Fatalf("allowed count %v, want %v", got, before+1)
	}

	// A redirect is relayed, not followed: the name it points to is never even resolved.
	resp, _, _ = h.send("GET http://web.test:" + p + "/redirect HTTP/1.1\r\nHost: web.test\r\n\r\n")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://evil.test/" {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
	if got := h.resolver.lookups(); !slices.Equal(got, []string{"web.test.", "web.test."}) {
		t.Fatalf("lookups %v", got)
	}
	if got := h.dialer.dials(); !slices.Equal(got, []string{"127.0.0.1:" + p, "127.0.0.1:" + p}) {
		t.Fatalf("dials %v", got)
	}

	// A Go client through the proxy, as a program in a Sandbox would use it.
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr})}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr}).Get("http://web.test:" + p + "/y")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, res); got != "hello " {
		t.Fatalf("got %q", got)
	}
	res.Body.Close()
	res, err = (&http.Client{Transport: tr}).Get("http://web.test:" + p + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, res); got != "one two" || res.TransferEncoding[0] != "chunked" {
		t.Fatalf("got %q, %v", got, res.TransferEncoding)
	}
	res.Body.Close()
	res, err = (&http.Client{Transport: tr}).Head("http://web.test:" + p + "/y")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, res); got != "" || res.StatusCode != 200 {
		t.Fatalf("HEAD: %d %q", res.StatusCode, got)
	}
	res.Body.Close()
}

func TestConnectTLS(t *testing.T) {
	expectNoLeak(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "secret") }))
	t.Cleanup(srv.Close)
	h := newHarness(t, allowed)
	h.name("tls.test", "127.0.0.1")
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: h.addr}),
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "example.com"}, // a name of httptest's certificate
	}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr}).Get("https://tls.test:" + port(srv.URL) + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if got := body(t, res); got != "secret" {
		t.Fatalf("got %q", got)
	}
	if got := h.dialer.dials(); !slices.Equal(got, []string{"127.0.0.1:" + port(srv.URL)}) {
		t.Fatalf("dials %v", got)
	}
}

func TestConnectPassesBytesSentWithTheRequest(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed)
	h.name("echo.test", "127.0.0.1")
	target := fmt.Sprintf("echo.test:%d", echo)
	resp, c, br := h.send("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\nhello")
	if resp.StatusCode != 200 || resp.Status != "200 Connection established" {
		t.Fatalf("got %q", resp.Status)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := io.WriteString(c, "again"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "again" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestNameNotOnListIsNeverResolved(t *testing.T) {
	expectNoLeak(t)
	h := newHarness(t, allowed)
	h.name("evil.test", "127.0.0.1")
	before := testutil.ToFloat64(requests.WithLabelValues(verdictRefused, ReasonNotAllowed))

	resp, _, _ := h.connect("evil.test:443")
	expectRefusal(t, resp, 403, ReasonNotAllowed, "Dockside egress proxy refused CONNECT to evil.test:443: not on this Sandbox's network.allow list")
	resp, _, _ = h.send("GET http://Evil.Test./x HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	expectRefusal(t, resp, 403, ReasonNotAllowed, "Dockside egress proxy refused GET to evil.test:80: not on this Sandbox's network.allow list")
	// A host on the list, but not at this port.
	h2 := newHarness(t, []string{"web.test:80"})
	resp, _, _ = h2.connect("web.test:443")
	expectRefusal(t, resp, 403, ReasonNotAllowed, "Dockside egress proxy refused CONNECT to web.test:443: not on this Sandbox's network.allow list")

	if got := h.resolver.lookups(); len(got) != 0 {
		t.Fatalf("lookups %v, want none", got)
	}
	if got := h2.resolver.lookups(); len(got) != 0 {
		t.Fatalf("lookups %v, want none", got)
	}
	if got := h.dialer.dials(); len(got) != 0 {
		t.Fatalf("dials %v", got)
	}
	want := []refusal{
		{Source{Namespace: "team-a", Name: "sbx"}, true, "evil.test:443", Refusal{ReasonNotAllowed, "not on this Sandbox's network.allow list"}},
		{Source{Namespace: "team-a", Name: "sbx"}, true, "evil.test:80", Refusal{ReasonNotAllowed, "not on this Sandbox's network.allow list"}},
	}
	got := h.refused()
	if len(got) != len(want) {
		t.Fatalf("OnRefused got %+v", got)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.src.Namespace != w.src.Namespace || g.src.Name != w.src.Name || g.known != w.known || g.dest != w.dest || g.r != w.r {
			t.Fatalf("OnRefused got %+v, want %+v", g, w)
		}
	}
	if got := testutil.ToFloat64(requests.WithLabelValues(verdictRefused, ReasonNotAllowed)); got != before+3 {
		t.Fatalf("refused count %v, want %v", got, before+3)
	}
}

func TestForbiddenAddressIsNeverDialled(t *testing.T) {
	expectNoLeak(t)
	echo := echoServer(t)
	h := newHarness(t, allowed)
	h.name("meta.test", "169.254.169.254")
	h.name("both.test", "169.254.169.254", "127.0.0.1")

	resp, _, _ := h.connect("meta.test:80")
	expectRefusal(t, resp, 403, ReasonForbiddenAddress, "Dockside egress proxy refused CONNECT to meta.test:80: resolves to 169.254.169.254, a link-local address")
	resp, _, _ = h.send("GET http://meta.test/latest/meta-data/ HTTP/1.1\r\nHost: meta.test\r\n\r\n")
	expectRefusal(t, resp, 403, ReasonForbiddenAddress, "Dockside egress proxy refused GET to meta.test:80: resolves to 169.254.169.254, a link-local address")
	resp, _, _ = h.connect("169.254.169.254:80")
	expectRefusal(t, resp, 403, ReasonForbiddenAddress, "Dockside egress proxy refused CONNECT to 169.254.169.254:80: 169.254.169.254 is a link-local address")
	resp, _, _ = h.connect("[::ffff:169.254.169.254]:80")
	expectRefusal(t, resp, 403, ReasonForbiddenAddress, "Dockside egress proxy refused CONNECT to 169.254.169.254:80: 169.254.169.254 is a link-local address")
	resp, _, _ = h.connect(fmt.Sprintf("127.0.0.2:%d", echo))
	expectRefusal(t, resp, 403, ReasonForbiddenAddress, fmt.Sprintf("Dockside egress proxy refused CONNECT to 127.0.0.2:%d: 127.0.0.2 is a loopback address", echo))
	if got := h.dialer.dials(); len(got) != 0 {
		t.Fatalf("dials %v, want none", got)
	}

	// A name with one permitted address among refused ones goes to the permitted one only.
	resp, _, _ = h.connect(fmt.Sprintf("both.test:%d", echo))
	if resp.StatusCode != 200 {
		t.Fatalf("got %q", resp.Status)
	}
	if got := h.dialer.dials(); !slices.Equal(got, []string{fmt.Sprintf("127.0.0.1:%d", echo)}) {
		t.Fatalf("dials %v", got)
	}

	// With no list, literals are the Policy's alone: ::1 is loopback, and not permitted.
	open := newHarness(t, nil)
	resp, _, _ = open.connect(fmt.Sprintf("[::1]:%d", echo))
	expectRefusal(t, resp, 403, ReasonForbiddenAddress, fmt.Sprintf("Dockside egress proxy refused CONNECT to [::1]:%d: ::1 is a loopback address", echo))
	if got := open.dialer.dials(); len(got) != 0 {
		t.Fatalf("dials %v, want none", got)
	}
}

func TestUnknownSourceIsRefused(t *testing.T) {
	expectNoLeak(t)
	h := newHarness(t, allowed, func(p *Proxy) { p.Sources = fakeSources{} })
	h.name("web.test", "127.0.0.1")
	resp, _, _ := h.connect("web.test:443")
	expectRefusal(t, resp, 403, ReasonUnknownSource, "Dockside egress proxy refused CONNECT to web.test:443: the connection comes from 127.0.0.1, which is not an Isolated Sandbox of this node")
	if got := h.resolver.lookups(); len(got) != 0 {
		t.Fatalf("lookups %v", got)
	}
	if got := h.refused(); len(got) != 1 || got[0].known || got[0].r.Reason != ReasonUnknownSource {
		t.Fatalf("OnRefused got %+v", got)
	}
}

func TestBadRequests(t *testing.T) {
	expectNoLeak(t)
	h := newHarness(t, allowed, func(p *Proxy) { p.headerTimeout = 200 * time.Millisecond })
	for raw, line := range map[string]string{
		"GET /x HTTP/1.1\r\nHost: web.test\r\n\r\n":                `refused GET to "/x": the egress proxy takes CONNECT host:port or an absolute http:// URL, got "/x"`,
		"GET https://web.test/ HTTP/1.1\r\nHost: web.test\r\n\r\n": `refused GET to "https://web.test/": only http:// URLs are forwarded (use CONNECT for https), got scheme "https"`,
		"CONNECT web.test HTTP/1.1\r\nHost: web.test\r\n\r\n":      `refused CONNECT to "web.test": CONNECT takes host:port, got "web.test"`,
		"CONNECT web.test:0 HTTP/1.1\r\nHost: web.test\r\n\r\n":    `refused CONNECT to "web.test:0": the port must be a number from 1 to 65535, got "0"`,
		"CONNECT web_.te$t:443 HTTP/1.1\r\nHost: web.test\r\n\r\n": `refused CONNECT to "web_.te$t:443": "web_.te$t" is not a valid host name: label "te$t" holds '$' (only a-z, 0-9, '-' and '_')`,
		"CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: x\r\n\r\n": `refused CONNECT to "[fe80::1%25eth0]:443": "fe80::1%25eth0": an address with a zone names no destination`,
		"NONSENSE\r\n\r\n": `refused the request: malformed request: "malformed HTTP request \"NONSENSE\""`,
		"GET http://web.test/ HTTP/1.1\r\nX: " + strings.Repeat("a", 70<<10): "refused the request: the request header is larger than 64 KiB",
		"GET http://web.test/ HTTP/1.1\r\n":                                  "refused the request: no complete request header within 200ms",
	} {
		resp, _, _ := h.send(raw)
		text := body(t, resp)
		if resp.StatusCode != 400 || resp.Header.Get("X-Dockside-Refusal") != ReasonBadRequest || text != "Dockside egress proxy "+line+"\n" {
			t.Errorf("%.40q: got %d %q", raw, resp.StatusCode, text)
		}
	}
	if got := h.resolver.lookups(); len(got) != 0 {
		t.Fatalf("lookups %v", got)
	}
}

func TestResolveAndDialFailures(t *testing.T) {
	expectNoLeak(t)
	h := newHarness(t, allowed)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	h.name("closed.test", "127.0.0.1")

	resp, _, _ := h.connect("nxdomain.test:443")
	expectRefusal(t, resp, 502, ReasonResolveFailed, "Dockside egress proxy refused CONNECT to nxdomain.test:443: cannot resolve nxdomain.test: no such host")

	before := testutil.ToFloat64(requests.WithLabelValues(verdictFailed, reasonDialFailed))
	resp, _, _ = h.connect(fmt.Sprintf("closed.test:%d", closed))
	text := body(t, resp)
	if resp.StatusCode != 502 || resp.Header.Get("X-Dockside-Refusal") != "" ||
		!strings.HasPrefix(text, fmt.Sprintf("Dockside egress proxy could not connect to closed.test:%d for CONNECT: ", closed)) || !strings.Contains(text, "refused") {
		t.Fatalf("got %d %q", resp.StatusCode, text)
	}
	if got := testutil.ToFloat64(requests.WithLabelValues(verdictFailed, reasonDialFailed)); got != before+1 {
		t.Fatalf("failed count %v, want %v", got, before+1)
	}
	if got := h.refused(); len(got) != 1 || got[0].r.Reason != ReasonResolveFailed {
		t.Fatalf("OnRefused got %+v, want only the resolve failure", got)
	}
}
