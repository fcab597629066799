package dataplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// testCA signs the certificates of these tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// issue signs a certificate for cn with usages, naming the data plane's Service, and returns it and its key in PEM.
func (ca *testCA) issue(t *testing.T, cn string, usages ...x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages, DNSNames: []string{"dockside-dataplane.dockside-system.svc"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// leaf is the certificate of certPEM.
func leaf(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func write(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// agentDir writes what an agent of node is given, from agents (the agents' CA), and returns the folder.
func agentDir(t *testing.T, agents *testCA, node string) string {
	dir := t.TempDir()
	crt, key := agents.issue(t, "dockside-agent", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	peerCrt, peerKey := agents.issue(t, PeerCommonName(node), x509.ExtKeyUsageClientAuth)
	write(t, dir, map[string][]byte{CertFile: crt, KeyFile: key, CAFile: agents.pem(), PeerCertFile: peerCrt, PeerKeyFile: peerKey})
	return dir
}

func TestPeerCommonNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(PeerCommonName("node-a")).To(Equal("dockside-agent:node-a"))
	g.Expect(nodeOfName("dockside-agent:node-a")).To(Equal("node-a"))
	for _, none := range []string{"dockside-agent", "dockside-agent:", "front-proxy-client", "node-a"} {
		g.Expect(nodeOfName(none)).To(BeEmpty(), none)
	}
}

// Each agent believes a caller from the front proxy's certificate, and from a peer's own certificate only
// for the node it names, said to be the one that forwarded the call; the serving certificate every agent
// holds is no peer's.
func TestAuthenticate(t *testing.T) {
	g := NewWithT(t)
	agents, proxyCA, stranger := newTestCA(t, "agents"), newTestCA(t, "front-proxy"), newTestCA(t, "stranger")
	s, err := New(Options{Node: "node-b", CertDir: agentDir(t, agents, "node-b")})
	g.Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	roots.AddCert(proxyCA.cert)
	s.proxy.Store(&frontProxy{
		verify: x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, allowedNames: []string{"front-proxy-client"},
		userHeaders: []string{"X-Remote-User"}, groupHeaders: []string{"X-Remote-Group"},
	})
	request := func(certPEM []byte, forwardedBy string, groups ...string) *http.Request {
		h := http.Header{}
		h.Set("X-Remote-User", "alice")
		for _, grp := range groups {
			h.Add("X-Remote-Group", grp)
		}
		if forwardedBy != "" {
			h.Set(forwardedHeader, forwardedBy)
		}
		return &http.Request{Header: h, TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf(t, certPEM)}}}
	}
	proxyCert, _ := proxyCA.issue(t, "front-proxy-client", x509.ExtKeyUsageClientAuth)
	c, err := s.authenticate(request(proxyCert, "", "devs"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(Caller{Name: "alice", Groups: []string{"devs"}, Extra: map[string][]string{}}))

	peerA, _ := agents.issue(t, PeerCommonName("node-a"), x509.ExtKeyUsageClientAuth)
	c, err = s.authenticate(request(peerA, "node-a", "system:masters"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.ForwardedBy).To(Equal("node-a"), "a peer's caller says whose word it is: authorize holds it to decision 0030")
	g.Expect(c.Groups).To(Equal([]string{"system:masters"}))

	_, err = s.authenticate(request(peerA, "node-c"))
	g.Expect(err).To(MatchError(ContainSubstring(`the peer certificate names node node-a, but the request says node "node-c" forwarded it`)))
	serving, _ := agents.issue(t, "dockside-agent", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	_, err = s.authenticate(request(serving, "node-a"))
	g.Expect(err).To(MatchError(ContainSubstring(`the client certificate "dockside-agent" of the agents' CA names no node`)))
	own, _ := agents.issue(t, PeerCommonName("node-b"), x509.ExtKeyUsageClientAuth)
	_, err = s.authenticate(request(own, "node-b"))
	g.Expect(err).To(MatchError(ContainSubstring("names this agent's own node node-b")))
	serverOnly, _ := agents.issue(t, PeerCommonName("node-a"), x509.ExtKeyUsageServerAuth)
	_, err = s.authenticate(request(serverOnly, "node-a"))
	g.Expect(err).To(MatchError(errNoProxyCert), "a peer certificate must be for client auth")
	strange, _ := stranger.issue(t, PeerCommonName("node-a"), x509.ExtKeyUsageClientAuth)
	_, err = s.authenticate(request(strange, "node-a"))
	g.Expect(err).To(MatchError(errNoProxyCert))
	agentAsProxy, _ := agents.issue(t, "front-proxy-client", x509.ExtKeyUsageClientAuth)
	_, err = s.authenticate(request(agentAsProxy, ""))
	g.Expect(err).To(MatchError(ContainSubstring("names no node")), "the agents' CA does not make a front proxy")
}

func TestANodesPeerCertificateMustNameIt(t *testing.T) {
	g := NewWithT(t)
	agents := newTestCA(t, "agents")
	_, err := New(Options{Node: "node-b", CertDir: agentDir(t, agents, "node-a")})
	g.Expect(err).To(MatchError(ContainSubstring(`must name this agent's node: common name "dockside-agent:node-b", not that of node "node-a"`)))
	dir := agentDir(t, agents, "node-b")
	g.Expect(os.Remove(filepath.Join(dir, PeerCertFile))).To(Succeed())
	s, err := New(Options{Node: "node-b", CertDir: dir})
	g.Expect(err).NotTo(HaveOccurred(), "an agent without a peer certificate serves its own node's Sandboxes")
	_, err = s.certs.clientConfig("dockside-dataplane.dockside-system.svc")
	g.Expect(err).To(MatchError(ContainSubstring("this agent has no peer certificate")))
}

// sarAnswers is a client whose SubjectAccessReviews allow what allowed says, and which counts them.
func sarAnswers(allowed func(authorizationv1.SubjectAccessReviewSpec) bool, asked *[]authorizationv1.SubjectAccessReviewSpec) client.Client {
	return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			sar := obj.(*authorizationv1.SubjectAccessReview)
			*asked = append(*asked, sar.Spec)
			sar.Status.Allowed = allowed(sar.Spec)
			return nil
		},
	}).WithScheme(runtime.NewScheme()).Build()
}

// A peer's word never makes a caller a cluster administrator: not in system:masters (refused without asking),
// nor one the API server lets do everything; anyone else is asked about as usual.
func TestPeerCallersAreNeverAdministrators(t *testing.T) {
	g := NewWithT(t)
	var asked []authorizationv1.SubjectAccessReviewSpec
	c := sarAnswers(func(spec authorizationv1.SubjectAccessReviewSpec) bool {
		if spec.User == "root" || spec.User == "admin" && slices.Contains(spec.Groups, "system:masters") {
			return true // cluster-admin and its like
		}
		return spec.User == "alice" && spec.ResourceAttributes.Verb == "create"
	}, &asked)
	a := newAuthCache()
	ctx := context.Background()

	denied, err := a.authorize(ctx, c, Caller{Name: "admin", Groups: []string{"system:masters"}, ForwardedBy: "node-a"}, "create", "team-a", "far", Exec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(denied).To(ContainSubstring(`the agent of node node-a passed on user "admin", who is in group system:masters: a call one agent forwards to another never acts as a cluster administrator`))
	g.Expect(asked).To(BeEmpty(), "refused before any question")

	denied, err = a.authorize(ctx, c, Caller{Name: "root", ForwardedBy: "node-a"}, "create", "team-a", "far", Exec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(denied).To(ContainSubstring(`the agent of node node-a passed on user "root", who may do everything in the cluster`))
	g.Expect(asked).To(HaveLen(1))
	g.Expect(*asked[0].ResourceAttributes).To(Equal(authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"}))

	denied, err = a.authorize(ctx, c, Caller{Name: "root"}, "create", "team-a", "far", Exec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(denied).To(BeEmpty(), "the front proxy's word is the API server's: a cluster administrator it names may exec")

	asked = nil
	alice := Caller{Name: "alice", Groups: []string{"devs"}, ForwardedBy: "node-a"}
	denied, err = a.authorize(ctx, c, alice, "create", "team-a", "far", Exec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(denied).To(BeEmpty())
	g.Expect(asked).To(HaveLen(2), "is alice an administrator (no), may alice exec (yes)")
	denied, err = a.authorize(ctx, c, alice, "get", "team-a", "far", Processes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(denied).To(ContainSubstring(`User "alice" cannot get resource "sandboxes/processes"`))
	g.Expect(asked).To(HaveLen(3), "the answer that alice is no administrator is kept allowedFor")
}

func TestAdministratorWithoutAsking(t *testing.T) {
	g := NewWithT(t)
	why, err := administrator(context.Background(), nil, Caller{Name: "admin", Groups: []string{"system:authenticated", "system:masters"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(why).To(Equal("is in group system:masters"), "kube-apiserver never asks its authorizers about system:masters, so neither does the agent")
}

// The front proxy's settings read again (refreshFrontProxy, every authRefresh) are those the next request is
// authenticated by: a rotated front-proxy CA needs no restart.
func TestTheFrontProxysRotatedCAIsFollowed(t *testing.T) {
	g := NewWithT(t)
	s, err := New(Options{Node: "node-b", CertDir: agentDir(t, newTestCA(t, "agents"), "node-b")})
	g.Expect(err).NotTo(HaveOccurred())
	settings := func(ca *testCA) *frontProxy {
		roots := x509.NewCertPool()
		roots.AddCert(ca.cert)
		return &frontProxy{verify: x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
			allowedNames: []string{"front-proxy-client"}, userHeaders: []string{"X-Remote-User"}}
	}
	request := func(ca *testCA) *http.Request {
		crt, _ := ca.issue(t, "front-proxy-client", x509.ExtKeyUsageClientAuth)
		h := http.Header{}
		h.Set("X-Remote-User", "alice")
		return &http.Request{Header: h, TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf(t, crt)}}}
	}
	oldCA, newCA := newTestCA(t, "front-proxy-old"), newTestCA(t, "front-proxy-new")
	s.proxy.Store(settings(oldCA))
	_, err = s.authenticate(request(oldCA))
	g.Expect(err).NotTo(HaveOccurred())
	s.proxy.Store(settings(newCA))
	_, err = s.authenticate(request(oldCA))
	g.Expect(err).To(MatchError(errNoProxyCert))
	c, err := s.authenticate(request(newCA))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Name).To(Equal("alice"))
}
