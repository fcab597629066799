package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/files"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
	"github.com/dockside-dev/dockside/internal/dataplane/processes"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// Files in Options.CertDir.
const (
	CertFile = "tls.crt" // the serving certificate, the same for every agent: served to the aggregator and to peers
	KeyFile  = "tls.key"
	CAFile   = "ca.crt" // the agents' CA: of the serving certificate and of every agent's peer certificate (certs.go)
)

// Options configure the data plane server of one agent.
type Options struct {
	Node        string // this agent's node
	BindAddress string // host:port of the HTTPS listener
	CertDir     string // CertFile, KeyFile and CAFile
	PeerCertDir string // PeerCertFile and PeerKeyFile, this agent's identity towards its peers; "" is CertDir
	Client      client.Client
	Reader      client.Reader // uncached reads: Sandboxes of any node, the front proxy's ConfigMap
	Driver      dd.Driver
	Freezes     *handoff.Freezes // captures under way on this node
	Idle        *handoff.Idle    // sessions' use: every call keeps its Sandbox awake and thaws one frozen for idleness; nil: none
	// Sandboxes is the agent's cache of its node's Sandboxes, whose events end the calls of a Sandbox deleted
	// or rebuilt (calls.go); nil: none.
	Sandboxes cache.Informers
	// LeaseNamespace holds the agents' node Leases, named LeaseName(node), where each publishes its data
	// plane's address (AddressAnnotation) for the others to forward to.
	LeaseNamespace string
	LeaseName      func(node string) string
	// AdvertiseAddress is this agent's data plane address as other agents reach it; "" publishes none, and
	// Sandboxes of this node are then served only by this agent.
	AdvertiseAddress string
	// ServerName is the DNS name every agent's certificate holds (the Service of the APIService,
	// <service>.<namespace>.svc), which agents verify each other by.
	ServerName string
	// Files serves sandboxes/<name>/files of this node's Sandboxes once the caller is authorized for
	// files.Verb; nil answers 404.
	Files *files.Handler
	// CaptureWait bounds how long a call waits for a Checkpoint capture that holds the Sandbox; default 1m.
	CaptureWait time.Duration
	// Limits bound the listener: timeouts and connection caps.
	Limits Limits
	Log    logr.Logger
}

// Server is the aggregated API server of one agent; it is a manager.Runnable.
type Server struct {
	opts      Options
	certs     *certificates
	proxy     atomic.Pointer[frontProxy]
	proxyAuth authenticator.Request // the request-header authenticator, on proxy's settings as last read
	// processes are the background processes and named execs of this node's Sandboxes; they run under
	// ctx, the server's, which ends with the agent.
	processes *processes.Table
	ctx       atomic.Pointer[context.Context]
	auth      *authCache
	calls     *callRegistry // the open calls, ended with their Sandbox
}

// New checks the options and loads the certificates.
func New(opts Options) (*Server, error) {
	if opts.CaptureWait == 0 {
		opts.CaptureWait = time.Minute
	}
	opts.Limits = opts.Limits.withDefaults()
	if opts.CertDir == "" {
		return nil, errors.New("the data plane needs a certificate folder (--dataplane-cert-dir) with tls.crt, tls.key and ca.crt: kube-apiserver verifies the agent with the APIService's caBundle")
	}
	if opts.PeerCertDir == "" {
		opts.PeerCertDir = opts.CertDir
	}
	certs, err := loadCertificates(opts.CertDir, opts.PeerCertDir, opts.Node)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, certs: certs, processes: processes.NewTable(), auth: newAuthCache(), calls: newCallRegistry()}
	s.proxyAuth = newFrontProxyAuthenticator(s.proxy.Load)
	return s, nil
}

// base is the context background processes run under: the server's once it started.
func (s *Server) base() context.Context {
	if ctx := s.ctx.Load(); ctx != nil {
		return *ctx
	}
	return context.Background()
}

// authRefresh is how often the front proxy's settings are read again (its CA may be rotated).
const authRefresh = time.Minute

// Start serves until ctx ends.
func (s *Server) Start(ctx context.Context) error {
	s.ctx.Store(&ctx)
	fp, err := loadFrontProxy(ctx, s.opts.Reader)
	if err != nil {
		return err
	}
	s.proxy.Store(fp)
	go s.refreshFrontProxy(ctx)
	s.certs.run(ctx, s.opts.Log, s.opts.PeerCertDir)
	if err := s.watchSandboxes(ctx); err != nil {
		return err
	}
	if s.opts.AdvertiseAddress != "" {
		if err := s.Advertise(ctx, s.opts.AdvertiseAddress); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("the data plane's listener: %w", err)
	}
	limits := s.opts.Limits
	srv := &http.Server{
		Handler: s,
		// The handshake too is bounded by ReadHeaderTimeout. Neither timeout reaches a stream: a hijacked
		// connection is the handler's, and one that reads a body or writes output is not idle.
		ReadHeaderTimeout: limits.HeaderTimeout,
		IdleTimeout:       limits.IdleTimeout,
		TLSConfig:         s.certs.serverConfig(s.trustedClient),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          httpErrorLog(s.opts.Log),
	}
	s.opts.Log.Info("Serving the data plane", "address", ln.Addr().String(), "group", GroupVersion.String(),
		"headerTimeout", limits.HeaderTimeout, "idleTimeout", limits.IdleTimeout,
		"maxConnections", limits.MaxConnections, "maxConnectionsPerSource", limits.MaxConnectionsPerSource)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(newLimitListener(ln, limits, s.opts.Log), "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut) // hijacked exec streams end with ctx, through their requests' contexts
		return nil
	}
}

func (s *Server) refreshFrontProxy(ctx context.Context) {
	tick := time.NewTicker(authRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if fp, err := loadFrontProxy(ctx, s.opts.Reader); err != nil {
				s.opts.Log.Error(err, "Reading the front proxy's settings again; keeping the last ones")
			} else {
				s.proxy.Store(fp)
			}
		}
	}
}

// ServeHTTP routes: health, discovery, then the Sandbox subresources.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/livez", "/readyz":
		_, _ = w.Write([]byte("ok"))
		return
	}
	if serveDiscovery(w, r.URL.Path) {
		return
	}
	t, ok := parseTarget(r.URL.Path)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource (%s)", r.URL.Path)
		return
	}
	ctx, span := tracing.Begin(tracing.FromHeaders(r.Context(), r.Header), "dataplane."+t.Subresource,
		tracing.Namespace(t.Namespace), tracing.Sandbox(t.Name), tracing.Subresource(t.Subresource), tracing.HTTPMethod(r.Method))
	defer span.End()
	r = r.WithContext(ctx)
	caller, err := s.authenticate(r)
	if err != nil {
		writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "%v", err)
		return
	}
	s.serveTarget(w, r, t, caller)
}

// serveTarget authorizes the caller, finds the Sandbox, and serves it here or on its node.
func (s *Server) serveTarget(w http.ResponseWriter, r *http.Request, t target, caller Caller) {
	ctx := r.Context()
	log := s.opts.Log.WithValues("sandbox", t.Namespace+"/"+t.Name, "subresource", t.Subresource, "user", caller.Name, "forwardedBy", caller.ForwardedBy)
	if t.Subresource != Exec && t.Subresource != Files && t.Subresource != PortForward && t.Subresource != Processes {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "sandboxes have no subresource %q: exec, files, portforward and processes are served", t.Subresource)
		return
	}
	denied, err := s.auth.authorize(ctx, s.opts.Client, caller, verbOf(r, t), t.Namespace, t.Name, t.Subresource)
	if err != nil {
		log.Error(err, "Authorizing")
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "%v", err)
		return
	}
	if denied != "" {
		writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, "%s", denied)
		return
	}
	sbx, refused, err := lookup(ctx, s.opts.Client, s.opts.Reader, s.opts.Node, t)
	switch {
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "%v", err)
		return
	case refused != nil:
		refused.write(w)
		return
	}
	if node := nodeOf(sbx); node != s.opts.Node {
		s.forward(w, r, sbx, node, caller)
		return
	}
	log.V(1).Info("Serving")
	done, woken, refused := s.wake(ctx, sbx)
	if refused != nil {
		refused.write(w)
		return
	}
	defer done()
	w, r, leave := s.track(w, r, sbx, t)
	defer leave()
	ctx = r.Context()
	switch t.Subresource {
	case Files:
		s.serveFiles(w, r, sbx, woken)
		return
	case Processes:
		s.serveProcesses(w, r, sbx, t.Rest, woken)
		return
	}
	if refused := s.awaitRunnable(ctx, sbx, woken); refused != nil {
		refused.write(w)
		return
	}
	switch t.Subresource {
	case Exec:
		if p, ok := s.processOf(w, r, sbx); ok {
			serveExec(w, r, executor{driver: s.opts.Driver, proc: p, env: topology.CommandEnv(sbx.Spec.CommandEnv, nil)}, topology.NamesOf(sbx).Primary())
			if p != nil { // it did not get as far as running when this is the first finish
				p.Finish(dd.StreamExecResult{}, errors.New("the exec did not start"))
			}
		}
	case PortForward:
		servePortForward(w, r, s.opts.Driver, sbx)
	}
}

// wake marks a call into a Sandbox of this node as going on until done: it first starts a lazy Sandbox that
// has not started (docs/design/lazy-start.md) and waits for the start, and thaws one its agent froze for
// idleness (docs/design/idle-pause.md). sbx follows the start. A frozen Sandbox's status says so until the
// Sandbox reconciler's next pass, which the thaw asks for: woken says the call found it frozen for
// idleness and thawed it, so that the rules that read the status (runnable, files' paused) take it as running.
func (s *Server) wake(ctx context.Context, sbx *dsv1alpha1.Sandbox) (done func(), woken bool, refused *refusal) {
	if dsv1alpha1.LazyUnstarted(sbx) && sbx.Spec.Lifecycle != dsv1alpha1.LifecyclePaused && sbx.DeletionTimestamp == nil {
		if refused := s.awaitStart(ctx, sbx); refused != nil {
			return nil, false, refused
		}
	}
	done, _, err := s.opts.Idle.Use(ctx, types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name}, sbx.UID)
	if err != nil {
		s.opts.Log.Error(err, "Resuming from an idle pause", "sandbox", sbx.Namespace+"/"+sbx.Name)
		return nil, false, &refusal{http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf("the call could not start: %v", err)}
	}
	return done, dsv1alpha1.IdlePaused(sbx), nil
}

// verbOf is the verb a request needs: files says its own (get to read, create to change), processes get to
// list and read, create to start, write and signal; running a command or reaching a port is always create,
// whatever the HTTP method (see authorize).
func verbOf(r *http.Request, t target) string {
	switch {
	case t.Subresource == Files:
		return files.Verb(r)
	case t.Subresource == Processes && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		return "get"
	}
	return "create"
}

// serveFiles hands a files request to the files handler, which applies its own rules to a paused Sandbox
// (reads go on, changes are refused: docs/design/dataplane-files.md); one the call woke is not paused.
func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox, woken bool) {
	if s.opts.Files == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "sandboxes/files is not served by this agent")
		return
	}
	tg, err := files.TargetFor(sbx)
	var se *fileswire.StatusError
	switch {
	case errors.As(err, &se):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(se.Status.Code))
		_ = json.NewEncoder(w).Encode(se.Status)
		return
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "%v", err)
		return
	}
	tg.Paused = tg.Paused && !woken
	s.opts.Files.Serve(w, r, tg)
}

// awaitRunnable applies the rule of runnable, and waits at most CaptureWait while a capture holds the Sandbox.
func (s *Server) awaitRunnable(ctx context.Context, sbx *dsv1alpha1.Sandbox, woken bool) *refusal {
	if refused := runnable(sbx, woken); refused != nil {
		if refused = s.runnableNow(ctx, sbx, woken); refused != nil {
			return refused
		}
	}
	deadline := time.Now().Add(s.opts.CaptureWait)
	for s.opts.Freezes.Held(sbx.UID) {
		if time.Now().After(deadline) {
			return &refusal{http.StatusConflict, metav1.StatusReasonConflict,
				fmt.Sprintf("a Checkpoint capture still holds Sandbox %q frozen after %s: try again once it is done", sbx.Name, s.opts.CaptureWait)}
		}
		select {
		case <-ctx.Done():
			return &refusal{http.StatusConflict, metav1.StatusReasonConflict, "the call ended while a Checkpoint capture held the Sandbox"}
		case <-time.After(captureWaitPoll):
		}
	}
	return nil
}

// runnableNow applies runnable again to the Sandbox as the API server has it now. The agent's cache may be a moment
// behind its own status write: a client that saw the Sandbox Running and called at once would otherwise be
// refused as Pending. Only a refusal costs the read.
func (s *Server) runnableNow(ctx context.Context, sbx *dsv1alpha1.Sandbox, woken bool) *refusal {
	fresh := &dsv1alpha1.Sandbox{}
	if err := s.opts.Reader.Get(ctx, client.ObjectKeyFromObject(sbx), fresh); err != nil || fresh.UID != sbx.UID {
		return runnable(sbx, woken)
	}
	*sbx = *fresh
	return runnable(sbx, woken)
}
