package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/dataplane/forwardclient"
)

const testDomain = "e2b.local"

func TestSandboxHostsAreReadUnderTheDomainOnly(t *testing.T) {
	g := NewWithT(t)
	gw := &Gateway{domain: testDomain}
	for host, want := range map[string]struct {
		port   int
		id     string
		ok     bool
		refuse string
	}{
		"8080-e2b-abc.e2b.local":       {8080, "e2b-abc", true, ""},
		"49983-E2B-abc.E2B.local:3000": {49983, "e2b-abc", true, ""},
		"8080-web.e2b.local.":          {8080, "web", true, ""},
		"api.e2b.local":                {},
		"e2b.local":                    {},
		"8080-web.example.com":         {},
		"8080-web.e2b.local.evil.com":  {},
		"99999-web.e2b.local":          {0, "", true, "names no port"},
		"0-web.e2b.local":              {0, "", true, "names no port"},
		"8080-.e2b.local":              {0, "", true, "names no sandbox"},
		"8080-a.b.e2b.local":           {0, "", true, "names no sandbox"},
		"8080-a_b.e2b.local":           {0, "", true, "names no sandbox"},
	} {
		port, id, ok, err := gw.sandboxHost(host)
		g.Expect(ok).To(Equal(want.ok), host)
		g.Expect(port).To(Equal(want.port), host)
		g.Expect(id).To(Equal(want.id), host)
		if want.refuse == "" {
			g.Expect(err).NotTo(HaveOccurred(), host)
		} else {
			g.Expect(err).To(MatchError(ContainSubstring(want.refuse)), host)
		}
	}
	_, _, ok, _ := (&Gateway{}).sandboxHost("8080-web.e2b.local")
	g.Expect(ok).To(BeFalse(), "a gateway without a domain routes no host")
}

// dialed records what the gateway's port-forward sessions were opened to and the connections dialled in them.
type dialed struct {
	mu       sync.Mutex
	calls    []string
	sessions []*fakeSession
	api      *[]string    // the fake API server's record of calls
	later    atomic.Int64 // how far the port pool's clock is ahead of time.Now, in nanoseconds
}

// advance moves the port pool's clock on by by.
func (d *dialed) advance(by time.Duration) { d.later.Add(int64(by)) }

func (d *dialed) add(s string) { d.mu.Lock(); d.calls = append(d.calls, s); d.mu.Unlock() }
func (d *dialed) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

func (d *dialed) opened() []*fakeSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*fakeSession(nil), d.sessions...)
}

// fakeSession is a port-forward session of the tests: its connections reach app (port 9: nothing listens), and
// it records them as namespace/sandbox[/service]:port.
type fakeSession struct {
	d      *dialed
	name   string // namespace/sandbox[/service]
	app    string
	done   chan bool
	closed sync.Once
}

func (s *fakeSession) Dial(port int) (net.Conn, error) {
	s.d.add(fmt.Sprintf("%s:%d", s.name, port))
	if port == 9 {
		return closedPort{}, nil
	}
	return net.Dial("tcp", s.app)
}

func (s *fakeSession) Done() <-chan bool { return s.done }
func (s *fakeSession) Close() error      { s.closed.Do(func() { close(s.done) }); return nil }
func (s *fakeSession) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// hostGateway is a gateway of domain e2b.local on the fake API server whose port-forward sessions reach app
// (or, for port 9, a port nothing listens on, as the data plane says it), and the record of those sessions.
func hostGateway(t *testing.T, app *httptest.Server) (*httptest.Server, *dialed) {
	t.Helper()
	api, seen := fakeAPI(t)
	gw := newTestGateway(t, api.URL)
	gw.domain = testDomain
	d := &dialed{api: seen}
	gw.ports.now = func() time.Time { return time.Now().Add(time.Duration(d.later.Load())) }
	gw.ports.open = func(_ context.Context, c *caller, sandbox, service string) (portSession, error) {
		name := c.namespace + "/" + sandbox
		if service != "" {
			name += "/" + service
		}
		s := &fakeSession{d: d, name: name, app: strings.TrimPrefix(app.URL, "http://"), done: make(chan bool)}
		d.mu.Lock()
		d.sessions = append(d.sessions, s)
		d.mu.Unlock()
		return s, nil
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return srv, d
}

// closedPort is a forwarded connection to a port nothing listens on: the data plane's refusal at the first read.
type closedPort struct{ net.Conn }

func (closedPort) Read([]byte) (int, error) {
	return 0, &forwardclient.PortError{Message: "connection refused"}
}
func (closedPort) Write(b []byte) (int, error)      { return len(b), nil }
func (closedPort) Close() error                     { return nil }
func (closedPort) SetDeadline(time.Time) error      { return nil }
func (closedPort) SetReadDeadline(time.Time) error  { return nil }
func (closedPort) SetWriteDeadline(time.Time) error { return nil }
func (closedPort) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (closedPort) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// heard is what the application in the sandbox got of a request.
type heard struct {
	host   string
	header http.Header
}

// echoApp is the application in a sandbox: it answers the path and keeps what it heard.
func echoApp(t *testing.T) (*httptest.Server, <-chan heard) {
	t.Helper()
	got := make(chan heard, 16)
	up := websocket.Upgrader{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // kept for the first 16 requests: tests that send more read none
		case got <- heard{r.Host, r.Header.Clone()}:
		default:
		}
		if websocket.IsWebSocketUpgrade(r) {
			conn, err := up.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			for {
				kind, msg, err := conn.ReadMessage()
				if err != nil {
					return
				}
				_ = conn.WriteMessage(kind, append([]byte("echo "), msg...))
			}
		}
		_, _ = io.WriteString(w, "app says "+r.URL.Path)
	}))
	t.Cleanup(app.Close)
	return app, got
}

// get sends GET path to the gateway at gw as host, with headers.
func get(t *testing.T, gw, host, path string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, gw+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAPortIsProxiedWithTheCallersKeyWhichTheAppNeverSees(t *testing.T) {
	g := NewWithT(t)
	app, got := echoApp(t)
	gw, d := hostGateway(t, app)
	code, body := get(t, gw.URL, "8080-web.e2b.local", "/hello", map[string]string{"X-Access-Token": "key-a", "Authorization": "Bearer app-own"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(Equal("app says /hello"))
	g.Expect(d.all()).To(Equal([]string{"ns-a/web:8080"}))
	h := <-got
	g.Expect(h.host).To(Equal("8080-web.e2b.local"), "the application sees the host it was asked for")
	g.Expect(h.header.Get("X-Access-Token")).To(BeEmpty(), "the key is a Kubernetes credential: never the sandbox's")
	g.Expect(h.header.Get("Authorization")).To(Equal("Bearer app-own"), "the application's own header passes")

	code, body = get(t, gw.URL, "8080-web.e2b.local", "/", map[string]string{"X-API-Key": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect((<-got).header.Get("X-Api-Key")).To(BeEmpty())
}

func TestPortRefusalsHaveE2BShapes(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	key := map[string]string{"X-Access-Token": "key-a"}
	for _, c := range []struct {
		host    string
		headers map[string]string
		code    int
		says    string
	}{
		{"8080-web.e2b.local", nil, http.StatusUnauthorized, "missing key"},
		{"8080-web.e2b.local", map[string]string{"X-Access-Token": "wrong"}, http.StatusUnauthorized, "not a valid Kubernetes token"},
		{"8080-gone.e2b.local", key, http.StatusBadGateway, "The sandbox was not found"},
		{"9-web.e2b.local", key, http.StatusBadGateway, "The sandbox is running but port is not open"},
		{"8080-sleepy.e2b.local", key, http.StatusBadGateway, "paused"},
		{"70000-web.e2b.local", key, http.StatusBadRequest, "names no port"},
		{"8080-a.b.e2b.local", key, http.StatusBadRequest, "names no sandbox"},
	} {
		code, body := get(t, gw.URL, c.host, "/", c.headers)
		g.Expect(code).To(Equal(c.code), c.host+" "+body)
		var e map[string]any
		g.Expect(json.Unmarshal([]byte(body), &e)).To(Succeed(), body)
		g.Expect(e).To(HaveKeyWithValue("code", BeEquivalentTo(c.code)), c.host)
		g.Expect(e["message"]).To(ContainSubstring(c.says), c.host)
		if c.code == http.StatusBadGateway {
			g.Expect(e).To(HaveKeyWithValue("sandboxId", strings.Split(strings.SplitN(c.host, "-", 2)[1], ".")[0]), c.host)
		}
	}
	g.Expect(d.all()).To(Equal([]string{"ns-a/web:9"}), "only a Sandbox that is there and running is dialled")
}

func TestATrafficTokenGuardsItsSandboxesPorts(t *testing.T) {
	g := NewWithT(t)
	app, got := echoApp(t)
	gw, d := hostGateway(t, app)
	for token, says := range map[string]string{"": "is missing", "not-it": "is not this sandbox's"} {
		h := map[string]string{"X-Access-Token": "key-a"}
		if token != "" {
			h[trafficTokenHeader] = token
		}
		code, body := get(t, gw.URL, "3000-locked.e2b.local", "/", h)
		g.Expect(code).To(Equal(http.StatusForbidden), body)
		g.Expect(body).To(ContainSubstring(says))
		g.Expect(body).To(ContainSubstring(`"code":403`))
	}
	g.Expect(d.all()).To(BeEmpty(), "nothing was dialled without the token")
	code, body := get(t, gw.URL, "3000-locked.e2b.local", "/in", map[string]string{"X-Access-Token": "key-a", "E2B-Traffic-Access-Token": "tok"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect((<-got).header.Get(trafficTokenHeader)).To(BeEmpty())
	code, _ = get(t, gw.URL, "3000-locked.e2b.local", "/", map[string]string{trafficTokenHeader: "tok"})
	g.Expect(code).To(Equal(http.StatusUnauthorized), "the token does not stand for a key")
}

func TestAWebSocketGoesThroughToThePort(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, _ := hostGateway(t, app)
	u, err := url.Parse(gw.URL)
	g.Expect(err).NotTo(HaveOccurred())
	u.Scheme = "ws"
	conn, resp, err := websocket.DefaultDialer.Dial(u.String()+"/ws", http.Header{"Host": {"8080-web.e2b.local"}, "X-Access-Token": {"key-a"}})
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusSwitchingProtocols))
	g.Expect(conn.WriteMessage(websocket.TextMessage, []byte("ping"))).To(Succeed())
	_, msg, err := conn.ReadMessage()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(msg)).To(Equal("echo ping"))
}

func TestEnvdsHostServesEnvdOnly(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	code, body := get(t, gw.URL, "49983-web.e2b.local", "/envs", map[string]string{"X-Access-Token": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(MatchJSON(`{"A":"1"}`))
	code, body = get(t, gw.URL, "49983-web.e2b.local", "/envs", map[string]string{"X-Access-Token": "key-a", "E2b-Sandbox-Id": "other"})
	g.Expect(code).To(Equal(http.StatusOK), "the host names the sandbox: "+body)
	code, _ = get(t, gw.URL, "49983-web.e2b.local", "/sandboxes", map[string]string{"X-API-Key": "key-a"})
	g.Expect(code).To(Equal(http.StatusNotImplemented), "the control plane is not served on a sandbox's host")
	g.Expect(d.all()).To(BeEmpty(), "envd is the gateway's own, not a forwarded port")
	code, body = get(t, gw.URL, "api.e2b.local", "/envs", map[string]string{"X-Access-Token": "key-a", "E2b-Sandbox-Id": "web"})
	g.Expect(code).To(Equal(http.StatusOK), "any other host routes by the header: "+body)
}

func TestASecureSandboxsEnvdTakesItsAccessTokenOnly(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, _ := hostGateway(t, app)
	code, body := get(t, gw.URL, "49983-secure.e2b.local", "/envs", map[string]string{"X-API-Key": "key-a"})
	g.Expect(code).To(Equal(http.StatusUnauthorized), body)
	g.Expect(body).To(ContainSubstring("X-Access-Token"))
	code, body = get(t, gw.URL, "49983-secure.e2b.local", "/envs", map[string]string{"X-Access-Token": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	code, body = get(t, gw.URL, "49983-web.e2b.local", "/envs", map[string]string{"X-API-Key": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK), "a sandbox not created secure takes the key either way: "+body)
}

func TestCreateMarksSecureAndPrivateTraffic(t *testing.T) {
	g := NewWithT(t)
	marks, err := marksOf(newSandbox{Secure: true, Network: json.RawMessage(`{"allowPublicTraffic":false}`), Metadata: map[string]string{"a": "b"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(marks).To(HaveKeyWithValue(AnnotationSecure, "true"))
	g.Expect(marks).To(HaveKeyWithValue(AnnotationMetadata, `{"a":"b"}`))
	g.Expect(marks[AnnotationTrafficToken]).To(HaveLen(64))
	again, err := marksOf(newSandbox{Network: json.RawMessage(`{"allowPublicTraffic":false}`)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again[AnnotationTrafficToken]).NotTo(Equal(marks[AnnotationTrafficToken]), "each sandbox its own token")
	public, err := marksOf(newSandbox{Network: json.RawMessage(`{"allowPublicTraffic":true}`)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(public).To(Equal(map[string]string{AnnotationMetadata: "null"}), "secure alone, or public traffic, makes no traffic token")

	gw := &Gateway{domain: testDomain}
	data, err := json.Marshal(gw.created(&caller{token: "k"}, "base", "e2b-x", marks))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(ContainSubstring(`"trafficAccessToken":"` + marks[AnnotationTrafficToken] + `"`))
	data, err = json.Marshal(gw.created(&caller{token: "k"}, "base", "e2b-x", public))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(data).To(ContainSubstring(`"trafficAccessToken":null`))

	g.Expect(networkRules(json.RawMessage(`{"allowPublicTraffic":false}`))).To(BeFalse())
	g.Expect(networkRules(json.RawMessage(`{"allowPublicTraffic":true,"allowOut":[]}`))).To(BeFalse())
	g.Expect(networkRules(json.RawMessage(`{"allowPublicTraffic":"no"}`))).To(BeTrue())
	g.Expect(networkRules(json.RawMessage(`{"allowOut":["1.1.1.1"]}`))).To(BeTrue())
	g.Expect(networkRules(json.RawMessage(`[1]`))).To(BeTrue())
}

func TestOneURLRoutesToAPortByHeaders(t *testing.T) {
	g := NewWithT(t)
	app, got := echoApp(t)
	gw, d := hostGateway(t, app)
	code, body := get(t, gw.URL, "api.e2b.local", "/x", map[string]string{"X-Access-Token": "key-a", "E2b-Sandbox-Id": "web", "E2b-Sandbox-Port": "3000"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(Equal("app says /x"))
	g.Expect((<-got).header.Get("E2b-Sandbox-Port")).To(BeEmpty())
	code, body = get(t, gw.URL, "127.0.0.1", "/envs", map[string]string{"X-Access-Token": "key-a", "E2b-Sandbox-Id": "web", "E2b-Sandbox-Port": "49983"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(MatchJSON(`{"A":"1"}`), "envd's port is the gateway's own envd")
	code, body = get(t, gw.URL, "127.0.0.1", "/", map[string]string{"X-Access-Token": "key-a", "E2b-Sandbox-Id": "web", "E2b-Sandbox-Port": "http"})
	g.Expect(code).To(Equal(http.StatusBadRequest), body)
	g.Expect(d.all()).To(Equal([]string{"ns-a/web:3000"}))
}
