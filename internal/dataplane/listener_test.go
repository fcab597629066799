package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/localcluster/pki"
)

// listenerPKI is what a test server and its clients need: the server's certificate folder and the client
// certificates of a peer agent and of a stranger (a CA the server does not know).
type listenerPKI struct {
	certDir         string
	peer, stranger  tls.Certificate
	frontProxy      tls.Certificate // the aggregator's client certificate, whose user headers are believed
	roots           *x509.CertPool  // the server's CA, for the clients
	frontProxyCAPEM []byte
}

func newListenerPKI(t *testing.T) listenerPKI {
	t.Helper()
	g := NewWithT(t)
	agents, err := pki.NewCA("agents")
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := pki.NewCA("front-proxy")
	g.Expect(err).NotTo(HaveOccurred())
	other, err := pki.NewCA("other")
	g.Expect(err).NotTo(HaveOccurred())
	serverCert, serverKey, err := agents.Issue(pki.Leaf{CommonName: "agent", IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	g.Expect(pki.WriteFiles(dir, map[string][]byte{CertFile: serverCert, KeyFile: serverKey, CAFile: agents.PEM()})).To(Succeed())
	client := func(ca *pki.CA) tls.Certificate {
		c, k, err := ca.Issue(pki.Leaf{CommonName: "client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		g.Expect(err).NotTo(HaveOccurred())
		pair, err := tls.X509KeyPair(c, k)
		g.Expect(err).NotTo(HaveOccurred())
		return pair
	}
	roots := x509.NewCertPool()
	roots.AddCert(agents.Cert)
	return listenerPKI{certDir: dir, peer: client(agents), stranger: client(other), frontProxy: client(proxy), roots: roots, frontProxyCAPEM: proxy.PEM()}
}

// startListener runs a data plane server with limits on a free port of 127.0.0.1 until the test ends; more
// changes its options.
func startListener(t *testing.T, p listenerPKI, limits Limits, more ...func(*Options)) string {
	t.Helper()
	g := NewWithT(t)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := free.Addr().String()
	g.Expect(free.Close()).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: AuthConfigMap.Namespace, Name: AuthConfigMap.Name},
		Data: map[string]string{"requestheader-client-ca-file": string(p.frontProxyCAPEM), "requestheader-username-headers": `["X-Remote-User"]`}}
	reader := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(cm).Build()
	opts := Options{Node: "n", BindAddress: addr, CertDir: p.certDir, Reader: reader, Client: reader, Limits: limits, Log: logr.Discard()}
	for _, f := range more {
		f(&opts)
	}
	s, err := New(opts)
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Eventually(done, time.Minute).Should(Receive(BeNil()))
	})
	g.Eventually(func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}, 30*time.Second).Should(Succeed())
	return addr
}

// healthz GETs /healthz with cert (none when empty) and returns the body.
func healthz(addr string, p listenerPKI, cert *tls.Certificate) (string, error) {
	cfg := &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1"}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get("https://" + addr + "/healthz")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// closedByServer waits up to wait for the server to close c (a read that ends otherwise than by its own
// deadline), and says whether it did.
func closedByServer(c net.Conn, wait time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var buf [512]byte
	for {
		_, err := c.Read(buf[:])
		var ne net.Error
		switch {
		case err == nil:
			continue // what the server said before it closed (a TLS alert)
		case errors.As(err, &ne) && ne.Timeout():
			return false
		default:
			return true
		}
	}
}

// Only a client with a certificate of the front proxy's CA or the agents' CA gets an answer, /healthz included.
func TestListenerAnswersOnlyTrustedClients(t *testing.T) {
	g := NewWithT(t)
	p := newListenerPKI(t)
	addr := startListener(t, p, Limits{})
	body, err := healthz(addr, p, &p.peer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(Equal("ok"))
	_, err = healthz(addr, p, nil)
	g.Expect(err).To(MatchError(ContainSubstring("certificate required")), "no certificate: the handshake fails")
	_, err = healthz(addr, p, &p.stranger)
	g.Expect(err).To(MatchError(ContainSubstring("bad certificate")), "a certificate of another CA: the handshake fails")
}

// Thousands of connections that never finish a handshake, that finish one without a certificate, or that
// send their headers too slowly are all closed within the header timeout, and what they held is given back;
// a keep-alive connection is closed once idle.
func TestListenerClosesIdleAndSlowConnections(t *testing.T) {
	g := NewWithT(t)
	p := newListenerPKI(t)
	const silent, noCert, slow = 1000, 1000, 50
	addr := startListener(t, p, Limits{HeaderTimeout: 2 * time.Second, IdleTimeout: 2 * time.Second,
		MaxConnections: 4000, MaxConnectionsPerSource: 4000})
	_, err := healthz(addr, p, &p.peer) // warm up what every connection shares
	g.Expect(err).NotTo(HaveOccurred())
	before := heapAfterGC()
	goroutines := runtime.NumGoroutine()

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range silent {
		c, err := net.Dial("tcp", addr)
		g.Expect(err).NotTo(HaveOccurred())
		conns = append(conns, c)
	}
	for range noCert { // TLS 1.3: the client's side of the handshake ends before the server judges it
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1"})
		g.Expect(err).NotTo(HaveOccurred())
		conns = append(conns, c)
	}
	for range slow { // a trusted client that trickles its headers, a byte a second
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{p.peer}})
		g.Expect(err).NotTo(HaveOccurred())
		conns = append(conns, c)
		go func() {
			for _, b := range []byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ") {
				if _, err := c.Write([]byte{b}); err != nil {
					return
				}
				time.Sleep(time.Second)
			}
		}()
	}
	held := heapAfterGC()
	t.Logf("heap: %d KiB before, %d KiB with %d connections open", before>>10, held>>10, len(conns))

	var wg sync.WaitGroup
	var mu sync.Mutex
	stayed := 0
	for _, c := range conns {
		wg.Go(func() {
			if !closedByServer(c, time.Minute) {
				mu.Lock()
				stayed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	g.Expect(stayed).To(BeZero(), "every connection is closed by the server")
	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil

	// A trusted keep-alive connection that asked once is closed when idle.
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{p.peer}})
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close()
	_, err = fmt.Fprint(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	g.Expect(err).NotTo(HaveOccurred())
	var buf [4096]byte
	n, err := c.Read(buf[:])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(buf[:n])).To(HavePrefix("HTTP/1.1 200"))
	g.Expect(closedByServer(c, time.Minute)).To(BeTrue(), "the idle keep-alive connection is closed")

	g.Eventually(runtime.NumGoroutine, time.Minute).Should(BeNumerically("<=", goroutines+10), "the connections' goroutines end")
	g.Eventually(heapAfterGC, time.Minute).Should(BeNumerically("<", before+8<<20), "the heap comes back near where it started")
}

// Connections past the cap per source address, and past the total, are closed as soon as they are accepted;
// other sources go on being served.
func TestListenerCapsConnections(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	limited := newLimitListener(ln, Limits{MaxConnections: 8, MaxConnectionsPerSource: 3}, logr.Discard())
	t.Cleanup(func() { _ = limited.Close() })
	// The test's own listener, rather than a server's: a server needs a probe connection to know it listens,
	// and that probe holds a place until the server reads its end, which a loaded machine may do late.
	go func() {
		for {
			c, err := limited.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }() // a server's side: closed at the client's end
		}
	}()
	addr := ln.Addr().String()
	dialFrom := func(source string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
		c, err := d.Dial("tcp", addr)
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	var held []net.Conn
	for range 3 {
		held = append(held, dialFrom("127.0.0.2"))
	}
	g.Expect(closedByServer(dialFrom("127.0.0.2"), 20*time.Second)).To(BeTrue(), "a 4th from one source is refused")
	for range 3 {
		held = append(held, dialFrom("127.0.0.3"))
	}
	held = append(held, dialFrom("127.0.0.4"), dialFrom("127.0.0.5"))
	g.Expect(closedByServer(dialFrom("127.0.0.6"), 20*time.Second)).To(BeTrue(), "a 9th in all is refused")
	for _, c := range held {
		g.Expect(closedByServer(c, time.Second)).To(BeFalse(), "those within the caps stay open")
	}
	_ = held[0].Close()
	_ = held[7].Close()
	g.Eventually(func() bool { return closedByServer(dialFrom("127.0.0.2"), time.Second) }, 30*time.Second).Should(BeFalse(),
		"a closed connection gives its place back")
}

// An exec stream outlives both timeouts: it took its connection over, which neither reaches.
func TestListenerLetsStreamsOutliveItsTimeouts(t *testing.T) {
	g := NewWithT(t)
	p := newListenerPKI(t)
	d, _ := runningPrimary(t)
	d.SetStreamExecHandler(func(_ context.Context, _ string, req dd.StreamExecRequest) int {
		_, _ = io.Copy(req.Stdout, req.Stdin)
		return 0
	})
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sbx", UID: "uid-1"}}
	sbx.Status.NodeName, sbx.Status.Phase, sbx.Status.TopologyGeneration = "n", dsv1alpha1.SandboxRunning, 1
	sch := k8sruntime.NewScheme()
	g.Expect(scheme.AddToScheme(sch)).To(Succeed())
	g.Expect(dsv1alpha1.AddToScheme(sch)).To(Succeed())
	cluster := fake.NewClientBuilder().WithScheme(sch).WithObjects(sbx).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if sar, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				sar.Status.Allowed = true // the API server's answer for the caller
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	const timeout = time.Second
	addr := startListener(t, p, Limits{HeaderTimeout: timeout, IdleTimeout: timeout}, func(o *Options) {
		o.Client, o.Driver = cluster, d
	})

	dialer := websocket.Dialer{Subprotocols: []string{v5Protocol},
		TLSClientConfig: &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{p.frontProxy}}}
	ws, resp, err := dialer.Dial("wss://"+addr+resourcePrefix+"ns/sandboxes/sbx/exec?command=cat&stdin=true&stdout=true",
		http.Header{"X-Remote-User": {"alice"}})
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	defer ws.Close()
	echo := func(word string) {
		g.Expect(ws.WriteMessage(websocket.BinaryMessage, append([]byte{stdinChannel}, word...))).To(Succeed())
		var got []byte
		for string(got) != word {
			_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, msg, err := ws.ReadMessage()
			g.Expect(err).NotTo(HaveOccurred())
			got = append(got, msg[1:]...)
		}
	}
	echo("before")
	time.Sleep(4 * timeout) // silent, past both timeouts
	echo("after")
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
