package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
	"github.com/dockside-dev/dockside/internal/testutil/unavailableapi"
)

func dataPlaneURL(g Gomega, cfg *rest.Config, subresource string) string {
	u, err := subresourceURL(cfg, "team", "py", subresource)
	g.Expect(err).NotTo(HaveOccurred())
	return u.String()
}

func answer(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, text) }
}

// get GETs the Sandbox's subresource through cfg's HTTP client and returns the answer's code and body.
func get(g Gomega, cfg *rest.Config, subresource string) (int, string) {
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Get(dataPlaneURL(g, cfg, subresource))
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}

// dial opens an upgraded files call as method through cfg.
func dial(g Gomega, cfg *rest.Config, method string) (*websocket.Conn, error) {
	u, err := subresourceURL(cfg, "team", "py", "files")
	g.Expect(err).NotTo(HaveOccurred())
	return filesclient.Dial(context.Background(), cfg, *u, method)
}

// A plain call (processes, files' stat) and a WebSocket handshake (files' transfers, exec, port-forward) that
// the aggregator answered unavailable are sent again until they pass.
func TestAggregatorUnavailableIsRetried(t *testing.T) {
	g := NewWithT(t)
	srv := unavailableapi.Start(t, "/", 2, answer("[]"))
	code, body := get(g, testConfig(t, srv.URL), "processes")
	g.Expect([]any{code, body, srv.Calls()}).To(Equal([]any{200, "[]", 3}))

	upgrader := websocket.Upgrader{Subprotocols: []string{fileswire.Protocol}}
	var method string
	srv = unavailableapi.Start(t, "/", 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method = r.URL.Query().Get("method")
		if conn, err := upgrader.Upgrade(w, r, nil); err == nil {
			conn.Close()
		}
	}))
	conn, err := dial(g, testConfig(t, srv.URL), http.MethodPut)
	g.Expect(err).NotTo(HaveOccurred())
	conn.Close()
	g.Expect([]any{srv.Calls(), method}).To(Equal([]any{2, http.MethodPut}))
}

// Past its tries the call ends with the aggregator's answer, said clearly.
func TestAggregatorUnavailableGivesUp(t *testing.T) {
	g := NewWithT(t)
	srv := unavailableapi.Start(t, "/", 100, answer("never"))
	cfg := testConfig(t, srv.URL)
	code, body := get(g, cfg, "processes")
	g.Expect(code).To(Equal(http.StatusServiceUnavailable))
	g.Expect(body).To(HavePrefix(`the API server's aggregator answered "service unavailable" 5 times over 4ms: ` +
		"it holds the data plane's APIService v1alpha1.subresources.dockside.dev unavailable"))
	g.Expect(srv.Calls()).To(Equal(5))

	_, err := dial(g, cfg, http.MethodGet)
	g.Expect(err).To(MatchError(ContainSubstring(`answered "service unavailable" 5 times`)))
	g.Expect(srv.Calls()).To(Equal(10))
}

// A 503 that may have reached an agent (its own Status), a body that cannot be sent again, a SPDY upgrade
// and a call outside the data plane are answered as they came, at once.
func TestOnlyTheAggregatorsUnavailableIsRetried(t *testing.T) {
	g := NewWithT(t)
	agent := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the node's Docker daemon is not reachable","reason":"ServiceUnavailable","code":503}`
	srv := unavailableapi.Start(t, "/", 0, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, agent)
	}))
	code, body := get(g, testConfig(t, srv.URL), "files")
	g.Expect([]any{code, body, srv.Calls()}).To(Equal([]any{503, agent, 1}))

	srv = unavailableapi.Start(t, "/", 100, answer("never"))
	cfg := testConfig(t, srv.URL)
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	once := func(req *http.Request) {
		before := srv.Calls()
		resp, err := hc.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		g.Expect([]any{resp.StatusCode, string(data), srv.Calls() - before}).To(Equal([]any{503, "service unavailable\n", 1}))
	}
	put, err := http.NewRequest(http.MethodPut, dataPlaneURL(g, cfg, "files")+"?path=/workspace/f", io.MultiReader(strings.NewReader("body")))
	g.Expect(err).NotTo(HaveOccurred())
	once(put)
	spdy, err := http.NewRequest(http.MethodPost, dataPlaneURL(g, cfg, "exec"), nil)
	g.Expect(err).NotTo(HaveOccurred())
	spdy.Header.Set("Upgrade", "SPDY/3.1")
	once(spdy)
	core, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/namespaces/team/pods", nil)
	g.Expect(err).NotTo(HaveOccurred())
	once(core)
}
