package localcluster

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/dataplane"
)

// What make run gives the agents: a serving certificate that is no peer's, and for each node a peer
// certificate of the agents' CA naming it; the CA's key stays out of the agents' folders.
func TestMakeRunsCertificates(t *testing.T) {
	g := NewWithT(t)
	d := Dataplane{CertDir: t.TempDir()}
	_, err := d.makeCertificates()
	g.Expect(err).NotTo(HaveOccurred())
	dir, err := d.PeerCertDir("node-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dir).To(Equal(filepath.Join(d.CertDir, "peers", "node-a")))

	read := func(path string) *x509.Certificate {
		data, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		block, _ := pem.Decode(data)
		g.Expect(block).NotTo(BeNil(), path)
		c, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	roots := x509.NewCertPool()
	roots.AddCert(read(filepath.Join(d.AgentCertDir(), dataplane.CAFile)))
	asClient := x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}

	peer := read(filepath.Join(dir, dataplane.PeerCertFile))
	g.Expect(peer.Subject.CommonName).To(Equal(dataplane.PeerCommonName("node-a")))
	_, err = peer.Verify(asClient)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = os.Stat(filepath.Join(dir, dataplane.PeerKeyFile))
	g.Expect(err).NotTo(HaveOccurred())

	_, err = read(filepath.Join(d.AgentCertDir(), dataplane.CertFile)).Verify(asClient)
	g.Expect(err).To(HaveOccurred(), "the serving certificate is for server auth only")
	for _, agentDir := range []string{d.AgentCertDir(), dir} {
		entries, err := os.ReadDir(agentDir)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range entries {
			g.Expect(e.Name()).NotTo(ContainSubstring("ca.key"), "no CA key where an agent reads")
		}
	}
	g.Expect(filepath.Join(d.CertDir, agentsCAKey)).To(BeAnExistingFile())
}
