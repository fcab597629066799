package dataplane

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// AddressAnnotation on an agent's node Lease says where its data plane listens (host:port), so that the
// agent a request lands on can forward it to the agent of the Sandbox's node.
const AddressAnnotation = "dockside.dev/dataplane-address"

// forwardedHeader marks a request one agent forwarded to another, which serves it itself or refuses it:
// a request is forwarded at most once.
const forwardedHeader = "X-Dockside-Forwarded-By"

// forward passes the request to the agent of node, as the caller: the target authenticates this agent by
// its peer certificate (the agents' CA, naming this agent's node) and checks the caller's access again, within
// the bounds of decision 0030 (peers.go).
func (s *Server) forward(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox, node string, caller Caller) {
	if node == "" {
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "Sandbox %q is not bound to a node yet (Pending)", sbx.Name)
		return
	}
	if by := r.Header.Get(forwardedHeader); by != "" {
		writeStatus(w, http.StatusBadGateway, metav1.StatusReasonInternalError,
			"the agent of node %s forwarded the call to this agent (node %s), which does not run Sandbox %q either", by, s.opts.Node, sbx.Name)
		return
	}
	addr, err := s.peerAddress(r.Context(), node)
	if err != nil {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "Sandbox %q runs on node %s: %v", sbx.Name, node, err)
		return
	}
	tlsConfig, err := s.certs.clientConfig(s.opts.ServerName)
	if err != nil {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "Sandbox %q runs on node %s: %v", sbx.Name, node, err)
		return
	}
	caller, refused := s.forwardable(r, caller, sbx, node)
	if refused != nil {
		refused.write(w)
		return
	}
	// A transport per call, since the peer's TLS settings are read at each; its connection is closed with the
	// call rather than left idle on the peer until the peer's idle timeout.
	transport := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: false}
	defer transport.CloseIdleConnections()
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "https", Host: addr})
			pr.Out.URL.Path, pr.Out.URL.RawPath = r.URL.Path, r.URL.RawPath
			stripCallerHeaders(pr.Out.Header)
			callerHeaders(pr.Out.Header, caller)
			pr.Out.Header.Set(forwardedHeader, s.opts.Node)
			tracing.ToHeaders(r.Context(), pr.Out.Header) // the peer's spans are children of this agent's
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeStatus(w, http.StatusBadGateway, metav1.StatusReasonInternalError, "forwarding to the agent of node %s at %s: %v", node, addr, err)
		},
	}
	s.opts.Log.V(1).Info("Forwarding", "sandbox", sbx.Namespace+"/"+sbx.Name, "node", node, "address", addr)
	proxy.ServeHTTP(w, r)
}

// peerAddress reads where node's agent serves the data plane from its Lease.
func (s *Server) peerAddress(ctx context.Context, node string) (string, error) {
	var lease coordinationv1.Lease
	key := client.ObjectKey{Namespace: s.opts.LeaseNamespace, Name: s.opts.LeaseName(node)}
	switch err := s.opts.Reader.Get(ctx, key, &lease); {
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("no agent of that node holds a Lease (%s)", key)
	case err != nil:
		return "", fmt.Errorf("reading the Lease of its agent: %w", err)
	}
	addr := lease.Annotations[AddressAnnotation]
	if addr == "" {
		return "", fmt.Errorf("its agent publishes no data plane address (annotation %s of Lease %s): it runs without --dataplane-bind-address", AddressAnnotation, key)
	}
	return addr, nil
}

// Advertise records the data plane's address on this agent's Lease (merge patch: the leader election's
// updates keep it) once, when the agent holds the Lease, and clears nothing: a stale address fails the
// forward with a connection error that names it.
func (s *Server) Advertise(ctx context.Context, address string) error {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.opts.LeaseNamespace, Name: s.opts.LeaseName(s.opts.Node)}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, AddressAnnotation, address)
	if err := s.opts.Client.Patch(ctx, lease, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("publishing the data plane's address on Lease %s/%s: %w", lease.Namespace, lease.Name, err)
	}
	return nil
}

// forwardable is the caller as this agent passes it to node. No agent believes a cluster administrator from a
// peer (decision 0030), so an administrator goes on by user name alone, without groups, and one whose name
// alone may not reach the Sandbox is refused here, in words that say why, rather than by the peer.
func (s *Server) forwardable(r *http.Request, caller Caller, sbx *dsv1alpha1.Sandbox, node string) (Caller, *refusal) {
	why, err := s.auth.administrator(r.Context(), s.opts.Client, caller)
	if err != nil {
		return Caller{}, &refusal{http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()}
	}
	if why == "" {
		return caller, nil
	}
	plain := Caller{Name: caller.Name, UID: caller.UID}
	t, _ := parseTarget(r.URL.Path)
	denied, err := s.auth.authorize(r.Context(), s.opts.Client, plain, verbOf(r, t), t.Namespace, t.Name, t.Subresource)
	switch {
	case err != nil:
		return Caller{}, &refusal{http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error()}
	case denied != "":
		return Caller{}, &refusal{http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(
			"Sandbox %q runs on node %s, and this agent (node %s) passes user %q, who %s, on to its agent by user name alone, without groups: no agent acts as a cluster administrator for another (docs/design/decisions/0030-peers-are-nodes-and-never-pass-administrators.md); bind the user name in namespace %q: %s",
			sbx.Name, node, s.opts.Node, caller.Name, why, sbx.Namespace, denied)}
	}
	return plain, nil
}
