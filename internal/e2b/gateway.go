package e2b

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem/filesystemconnect"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process/processconnect"
)

// Options configure a Gateway.
type Options struct {
	// API says where the API server is and how to trust it; any credential in it is dropped, since every call
	// is made with the caller's key.
	API *rest.Config
	// Scheme holds Dockside's kinds.
	Scheme *runtime.Scheme
	// DefaultNamespace is the namespace of a key whose identity is not a ServiceAccount.
	DefaultNamespace string
	// Domain is the E2B domain the gateway answers sandboxes with ("" for none: E2B_SANDBOX_URL is used).
	Domain string
	// CreateWait bounds how long create, resume and connect wait for a Sandbox to be Ready.
	CreateWait time.Duration
}

// Gateway serves E2B's control plane and envd on one handler (docs/e2b.md).
type Gateway struct {
	ids        *identities
	domain     string
	createWait time.Duration
	mux        *http.ServeMux // every route: the control plane and envd
	envd       *http.ServeMux // envd's routes alone, for its host (49983-<sandboxID>.<domain>)
	watchers   *watchers      // the filesystem watchers of this gateway (watch.go)
	// ports keeps the port-forward sessions to Sandboxes' ports and the Sandboxes read for them (portpool.go).
	ports *portPool
	// interpreter serves the code interpreter's routes, for its port (49999, interpreter.go).
	interpreter *http.ServeMux
}

// New builds the gateway's handler.
func New(o Options) (*Gateway, error) {
	if o.API == nil || o.Scheme == nil {
		return nil, fmt.Errorf("the gateway needs the API server's address and a scheme")
	}
	if o.CreateWait <= 0 {
		o.CreateWait = 2 * time.Minute
	}
	g := &Gateway{
		ids: newIdentities(o.API, o.Scheme, o.DefaultNamespace), domain: strings.ToLower(strings.TrimSuffix(o.Domain, ".")),
		createWait: o.CreateWait, mux: http.NewServeMux(), envd: http.NewServeMux(), ports: newPortPool(),
		watchers: newWatchers(defaultWatchLimits),
	}
	g.interpreter = g.interpreterMux()
	m := g.mux
	m.HandleFunc("POST /sandboxes", g.authed(g.create))
	m.HandleFunc("GET /sandboxes", g.authed(g.list))
	m.HandleFunc("GET /v2/sandboxes", g.authed(g.list))
	m.HandleFunc("GET /sandboxes/{id}", g.authed(g.get))
	m.HandleFunc("DELETE /sandboxes/{id}", g.authed(g.kill))
	m.HandleFunc("POST /sandboxes/{id}/timeout", g.authed(g.setTimeout("timeout")))
	m.HandleFunc("POST /sandboxes/{id}/refreshes", g.authed(g.setTimeout("duration")))
	m.HandleFunc("POST /sandboxes/{id}/pause", g.authed(g.pause))
	m.HandleFunc("POST /sandboxes/{id}/resume", g.authed(g.resume(false)))
	m.HandleFunc("POST /sandboxes/{id}/connect", g.authed(g.resume(true)))
	m.HandleFunc("POST /sandboxes/{id}/snapshots", g.authed(g.snapshot))
	m.HandleFunc("GET /snapshots", g.authed(g.listSnapshots))
	m.HandleFunc("DELETE /templates/{id}", g.authed(g.deleteTemplate))

	pp, ph := processconnect.NewProcessHandler(&processService{g: g})
	fp, fh := filesystemconnect.NewFilesystemHandler(&filesystemService{g: g})
	for _, mux := range []*http.ServeMux{g.mux, g.envd} {
		mux.Handle(pp, withEnvd(ph))
		mux.Handle(fp, withEnvd(fh))
		mux.Handle("GET /files", withEnvd(http.HandlerFunc(g.files)))
		mux.Handle("POST /files", withEnvd(http.HandlerFunc(g.files)))
		mux.Handle("GET /envs", withEnvd(http.HandlerFunc(g.envs)))
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		mux.HandleFunc("/", notSupported)
	}
	return g, nil
}

// ServeHTTP serves a sandbox's host (<port>-<sandboxID>.<domain>) by its port, and any other host (the
// control plane's, or one URL for every sandbox's envd) by its path.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.routeHost(w, r) {
		return
	}
	g.mux.ServeHTTP(w, r)
}

// authed resolves the caller of a control-plane call from its X-API-Key.
func (g *Gateway) authed(h func(http.ResponseWriter, *http.Request, *caller)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := g.ids.resolve(r.Context(), keyOf(r))
		if err != nil {
			writeError(w, err)
			return
		}
		h(w, r, c)
	}
}

// ensure the services keep to the generated interfaces.
var (
	_ processconnect.ProcessHandler       = (*processService)(nil)
	_ filesystemconnect.FilesystemHandler = (*filesystemService)(nil)
)
