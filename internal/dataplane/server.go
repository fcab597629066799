package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/files"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// Files in Options.CertDir.
const (
	CertFile = "tls.crt" // the agent's certificate: served to the aggregator and to peers, shown to peers as a client
	KeyFile  = "tls.key"
	CAFile   = "ca.crt" // the CA of every agent's certificate: a client certificate it signed is a peer agent
)

// Options configure the data plane server of one agent.
type Options struct {
	Node        string // this agent's node
	BindAddress string // host:port of the HTTPS listener
	CertDir     string // CertFile, KeyFile and CAFile
	Client      client.Client
	Reader      client.Reader // uncached reads: Sandboxes of any node, the front proxy's ConfigMap
	Driver      dd.Driver
	Freezes     *handoff.Freezes // captures under way on this node
	Idle        *handoff.Idle    // sessions' use: every call keeps its Sandbox awake and thaws one frozen for idleness; nil: none
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
	Log         logr.Logger
}

// Server is the aggregated API server of one agent; it is a manager.Runnable.
type Server struct {
	opts  Options
	cert  tls.Certificate
	peers *x509.CertPool
	proxy atomic.Pointer[frontProxy]
	// processes are the background processes and named execs of this node's Sandboxes; they run under
	// ctx, the server's, which ends with the agent.
	processes *processTable
	ctx       atomic.Pointer[context.Context]
	auth      *authCache
}

// New checks the options and loads the certificates.
func New(opts Options) (*Server, error) {
	if opts.CaptureWait == 0 {
		opts.CaptureWait = time.Minute
	}
	if opts.CertDir == "" {
		return nil, errors.New("the data plane needs a certificate folder (--dataplane-cert-dir) with tls.crt, tls.key and ca.crt: kube-apiserver verifies the agent with the APIService's caBundle")
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(opts.CertDir, CertFile), filepath.Join(opts.CertDir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("the data plane's certificate: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(opts.CertDir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("the data plane's CA: %w", err)
	}
	peers := x509.NewCertPool()
	if !peers.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(opts.CertDir, CAFile))
	}
	return &Server{opts: opts, cert: cert, peers: peers, processes: newProcessTable(), auth: newAuthCache()}, nil
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
	if s.opts.AdvertiseAddress != "" {
		if err := s.Advertise(ctx, s.opts.AdvertiseAddress); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return fmt.Errorf("the data plane's listener: %w", err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{s.cert},
			// Verified per request (verified): the front proxy's CA and the agents' CA are two roots with two meanings.
			ClientAuth: tls.RequestClientCert,
			NextProtos: []string{"http/1.1"}, // streams upgrade the connection, which HTTP/2 cannot
		},
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	s.opts.Log.Info("Serving the data plane", "address", ln.Addr().String(), "group", GroupVersion.String())
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
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

// authenticate believes the caller headers of the API server's front proxy and of peer agents, and of no one else.
func (s *Server) authenticate(r *http.Request) (Caller, error) {
	fp := s.proxy.Load()
	switch {
	case verified(r, fp.roots, fp.allowedNames):
		return fp.caller(r.Header)
	case verified(r, s.peers, nil):
		return peerHeaders.caller(r.Header)
	}
	return Caller{}, errNoProxyCert
}

// serveTarget authorizes the caller, finds the Sandbox, and serves it here or on its node.
func (s *Server) serveTarget(w http.ResponseWriter, r *http.Request, t target, caller Caller) {
	ctx := r.Context()
	log := s.opts.Log.WithValues("sandbox", t.Namespace+"/"+t.Name, "subresource", t.Subresource, "user", caller.Name)
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
	done, refused := s.wake(ctx, sbx)
	if refused != nil {
		refused.write(w)
		return
	}
	defer done()
	switch t.Subresource {
	case Files:
		s.serveFiles(w, r, sbx)
		return
	case Processes:
		s.serveProcesses(w, r, sbx, t.Rest)
		return
	}
	if refused := s.awaitRunnable(ctx, sbx); refused != nil {
		refused.write(w)
		return
	}
	switch t.Subresource {
	case Exec:
		if p, ok := s.processOf(w, r, sbx); ok {
			serveExec(w, r, executor{driver: s.opts.Driver, proc: p, env: topology.CommandEnv(sbx.Spec.CommandEnv, nil)}, topology.NamesOf(sbx).Primary())
			if p != nil { // it did not get as far as running when this is the first finish
				p.finish(dd.StreamExecResult{}, errors.New("the exec did not start"))
			}
		}
	case PortForward:
		servePortForward(w, r, s.opts.Driver, sbx)
	}
}

// wake marks a call into a Sandbox of this node as going on until done: it first starts a lazy Sandbox that
// has not started (docs/design/lazy-start.md) and waits for the start, and thaws one its agent froze for
// idleness (docs/design/idle-pause.md). sbx follows the start. A frozen Sandbox's status says so until the
// Sandbox reconciler's next pass, which the thaw asks for; the call treats it as Running from here.
func (s *Server) wake(ctx context.Context, sbx *dsv1alpha1.Sandbox) (done func(), refused *refusal) {
	if dsv1alpha1.LazyUnstarted(sbx) && sbx.Spec.Lifecycle != dsv1alpha1.LifecyclePaused && sbx.DeletionTimestamp == nil {
		if refused := s.awaitStart(ctx, sbx); refused != nil {
			return nil, refused
		}
	}
	done, _, err := s.opts.Idle.Use(ctx, types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name}, sbx.UID)
	if err != nil {
		s.opts.Log.Error(err, "Resuming from an idle pause", "sandbox", sbx.Namespace+"/"+sbx.Name)
		return nil, &refusal{http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf("the call could not start: %v", err)}
	}
	if dsv1alpha1.IdlePaused(sbx) {
		sbx.Status.Phase = dsv1alpha1.SandboxRunning
	}
	return done, nil
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
// (reads go on, changes are refused: docs/design/dataplane-files.md).
func (s *Server) serveFiles(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox) {
	if s.opts.Files == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "sandboxes/files is not served by this agent")
		return
	}
	tg, err := files.TargetFor(sbx)
	var se *files.StatusError
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
	s.opts.Files.Serve(w, r, tg)
}

// awaitRunnable applies the rule of runnable, and waits at most CaptureWait while a capture holds the Sandbox.
func (s *Server) awaitRunnable(ctx context.Context, sbx *dsv1alpha1.Sandbox) *refusal {
	if refused := runnable(sbx); refused != nil {
		return refused
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
