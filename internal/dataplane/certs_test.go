package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
)

// A serving certificate and an agents' CA rotated on disk are used without a restart: the next handshake
// shows the new certificate, and a peer certificate of the new CA is verified.
func TestRotatedCertificatesAreReadAgain(t *testing.T) {
	g := NewWithT(t)
	oldCA, newCA := newTestCA(t, "agents-old"), newTestCA(t, "agents-new")
	dir := agentDir(t, oldCA, "node-b")
	c, err := loadCertificates(dir, dir, "node-b")
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.run(ctx, logr.Discard(), dir)

	anyClient := func([][]byte, [][]*x509.Certificate) error { return nil } // the listener's own check is listener_test.go's
	ln, err := tls.Listen("tcp", "127.0.0.1:0", c.serverConfig(anyClient))
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	clientCrt, clientKey := oldCA.issue(t, "someone", x509.ExtKeyUsageClientAuth)
	client, err := tls.X509KeyPair(clientCrt, clientKey)
	g.Expect(err).NotTo(HaveOccurred())
	served := func() string {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{client}}) //nolint:gosec // reads the certificate served, trusts nothing
		if err != nil {
			return err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Issuer.CommonName
	}
	verifies := func(ca *testCA) bool {
		crt, _ := ca.issue(t, PeerCommonName("node-a"), x509.ExtKeyUsageClientAuth)
		opts, ok := c.agents()
		_, err := leaf(t, crt).Verify(opts)
		return ok && err == nil
	}
	g.Expect(served()).To(Equal("agents-old"))
	g.Expect(verifies(oldCA)).To(BeTrue())
	g.Expect(verifies(newCA)).To(BeFalse())

	crt, key := newCA.issue(t, "dockside-agent", x509.ExtKeyUsageServerAuth)
	write(t, dir, map[string][]byte{KeyFile: key, CertFile: crt, CAFile: newCA.pem()})
	// The files are watched; a missed event is made good by a read every minute.
	g.Eventually(served).WithTimeout(3*time.Minute).WithPolling(200*time.Millisecond).Should(Equal("agents-new"),
		"the rotated serving certificate is served without a restart")
	g.Eventually(func() bool { return verifies(newCA) }).WithTimeout(3*time.Minute).WithPolling(200*time.Millisecond).Should(BeTrue(),
		"a peer certificate of the rotated CA is believed")
	g.Expect(verifies(oldCA)).To(BeFalse(), "and one of the CA it replaced no longer")
}
