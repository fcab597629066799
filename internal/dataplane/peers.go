package dataplane

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Peers: every agent has an identity of its own towards the others, a client certificate of the agents' CA
// whose common name names its node, and believes a caller a peer passes on only within the bounds of
// docs/design/decisions/0030-peers-are-nodes-and-never-pass-administrators.md.

// peerNamePrefix begins the common name of every agent's peer certificate.
const peerNamePrefix = "dockside-agent:"

// PeerCommonName is the common name of node's agent's peer certificate.
func PeerCommonName(node string) string { return peerNamePrefix + node }

// nodeOfName is the node a peer certificate's common name names; "" when it names none.
func nodeOfName(cn string) string {
	node, _ := strings.CutPrefix(cn, peerNamePrefix)
	if node == cn {
		return ""
	}
	return node
}

// authenticate believes the caller headers of the API server's front proxy (k8s.io/apiserver's request-header
// authenticator) and, within decision 0030's bounds, of peer agents, and of no one else.
func (s *Server) authenticate(r *http.Request) (Caller, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return Caller{}, errNoProxyCert
	}
	if resp, ok, err := s.proxyAuth.AuthenticateRequest(r); ok && err == nil {
		return callerOf(resp.User), nil
	}
	opts, ok := s.certs.agents()
	if !ok || !verifiedBy(r, opts) {
		return Caller{}, errNoProxyCert
	}
	return s.peerCaller(r)
}

// verifiedBy reports whether the request's client certificate chains as opts ask.
func verifiedBy(r *http.Request, opts x509.VerifyOptions) bool {
	opts.Intermediates = x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := r.TLS.PeerCertificates[0].Verify(opts)
	return err == nil
}

// peerCaller is the caller a peer agent passed on, whose client certificate the agents' CA signed. The
// certificate must name a node, another than this agent's, and the request must say that node forwarded it.
func (s *Server) peerCaller(r *http.Request) (Caller, error) {
	cn := r.TLS.PeerCertificates[0].Subject.CommonName
	node := nodeOfName(cn)
	switch by := r.Header.Get(forwardedHeader); {
	case node == "":
		return Caller{}, fmt.Errorf("the client certificate %q of the agents' CA names no node (%sNODE), so it is no agent's peer certificate: call through the API server", cn, peerNamePrefix)
	case node == s.opts.Node:
		return Caller{}, fmt.Errorf("the peer certificate names this agent's own node %s, which forwards nothing to itself", node)
	case by != node:
		return Caller{}, fmt.Errorf("the peer certificate names node %s, but the request says node %q forwarded it", node, by)
	}
	resp, ok, err := peerHeaders.AuthenticateRequest(r)
	if err != nil || !ok {
		return Caller{}, errors.Join(fmt.Errorf("the agent of node %s named no user (X-Remote-User)", node), err)
	}
	c := callerOf(resp.User)
	c.ForwardedBy = node
	return c, nil
}
