package localcluster

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dockside-dev/dockside/internal/dataplane"
	"github.com/dockside-dev/dockside/internal/localcluster/pki"
)

// Dataplane sets the local control plane up for the agents' aggregated API (docs/design/dataplane.md,
// "make run"): kube-apiserver proxies subresources.dockside.dev to an agent on this machine.
type Dataplane struct {
	// Port is where the agents' data plane listens on loopback (--dataplane-bind-address=127.0.0.1:<Port>).
	Port int32
	// CertDir receives the certificates, made anew at every start: front-proxy-*.crt/key for kube-apiserver,
	// dataplane/{ca.crt,tls.crt,tls.key}, the agents' --dataplane-cert-dir, and the agents' CA's key, with
	// which PeerCertDir gives each node's agent a peer certificate of its own.
	CertDir string
}

// AgentCertDir is the folder to pass to the agents as --dataplane-cert-dir.
func (d Dataplane) AgentCertDir() string { return filepath.Join(d.CertDir, "dataplane") }

// agentsCAKey is the agents' CA's key, in CertDir: the agents are given no CA key.
const agentsCAKey = "dataplane-ca.key"

// PeerCertDir issues node's agent its peer certificate (common name dataplane.PeerCommonName(node)), from
// the agents' CA of the last start, and returns the folder to pass it as --dataplane-peer-cert-dir.
func (d Dataplane) PeerCertDir(node string) (string, error) {
	certPEM, err := os.ReadFile(filepath.Join(d.AgentCertDir(), dataplane.CAFile))
	if err != nil {
		return "", fmt.Errorf("the agents' CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(d.CertDir, agentsCAKey))
	if err != nil {
		return "", fmt.Errorf("the agents' CA: %w", err)
	}
	ca, err := pki.LoadCA(certPEM, keyPEM)
	if err != nil {
		return "", fmt.Errorf("the agents' CA: %w", err)
	}
	crt, key, err := ca.Issue(pki.Leaf{CommonName: dataplane.PeerCommonName(node), Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return "", fmt.Errorf("the peer certificate of node %s: %w", node, err)
	}
	dir := filepath.Join(d.CertDir, "peers", node)
	if err := pki.WriteFiles(dir, map[string][]byte{dataplane.PeerCertFile: crt, dataplane.PeerKeyFile: key}); err != nil {
		return "", fmt.Errorf("the peer certificate of node %s: %w", node, err)
	}
	return dir, nil
}

// Service and APIService names, as config/dataplane has them.
const (
	dataplaneNamespace = "dockside-system"
	dataplaneService   = "dockside-dataplane"
	frontProxyName     = "front-proxy-client"
)

// configure makes the certificates and gives kube-apiserver the front proxy's flags. It returns the agents'
// CA, the APIService's caBundle.
func (d Dataplane) configure(env *envtest.Environment) ([]byte, error) {
	caBundle, err := d.makeCertificates()
	if err != nil {
		return nil, fmt.Errorf("the data plane's certificates in %s: %w", d.CertDir, err)
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	for flag, value := range map[string]string{
		"requestheader-client-ca-file":       filepath.Join(d.CertDir, "front-proxy-ca.crt"),
		"proxy-client-cert-file":             filepath.Join(d.CertDir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(d.CertDir, "front-proxy-client.key"),
		"requestheader-allowed-names":        frontProxyName,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-uid-headers":          "X-Remote-Uid",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
	} {
		args.Set(flag, value)
	}
	return caBundle, nil
}

// makeCertificates writes the front proxy's and the agents' CAs and certificates, and returns the agents' CA.
//
//nolint:wrapcheck // one context for all: configure names the folder
func (d Dataplane) makeCertificates() ([]byte, error) {
	proxyCA, err := pki.NewCA("dockside-dev-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	proxyCert, proxyKey, err := proxyCA.Issue(pki.Leaf{CommonName: frontProxyName, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, err
	}
	agentCA, err := pki.NewCA("dockside-dev-dataplane-ca")
	if err != nil {
		return nil, err
	}
	// Server only: the aggregator and forwarding agents verify the agent by the Service's name; agents show
	// each other peer certificates of their own (PeerCertDir).
	agentCert, agentKey, err := agentCA.Issue(pki.Leaf{
		CommonName: "dockside-agent",
		DNSNames:   []string{dataplaneService + "." + dataplaneNamespace + ".svc", "localhost"},
		IPs:        []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		Usages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	caKey, err := agentCA.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := pki.WriteFiles(d.CertDir, map[string][]byte{
		"front-proxy-ca.crt": proxyCA.PEM(), "front-proxy-client.crt": proxyCert, "front-proxy-client.key": proxyKey,
		agentsCAKey: caKey,
	}); err != nil {
		return nil, err
	}
	if err := pki.WriteFiles(d.AgentCertDir(), map[string][]byte{
		dataplane.CAFile: agentCA.PEM(), dataplane.CertFile: agentCert, dataplane.KeyFile: agentKey,
	}); err != nil {
		return nil, err
	}
	return agentCA.PEM(), nil
}

// register creates (or updates) the Service and APIService that route the group to loopback. The Service is
// an ExternalName of localhost: the aggregator's default routing dials an ExternalName Service's name at the
// APIService's port, while a ClusterIP would need kube-proxy, which a bare control plane lacks, and endpoint
// routing (--enable-aggregator-routing) refuses loopback addresses.
func (d Dataplane) register(ctx context.Context, c client.Client, caBundle []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	objects := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": dataplaneNamespace}},
		{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"namespace": dataplaneNamespace, "name": dataplaneService},
			"spec": map[string]any{
				"type": "ExternalName", "externalName": "localhost",
				"ports": []any{map[string]any{"name": "https", "port": int64(d.Port)}},
			},
		},
		{
			"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
			"metadata": map[string]any{"name": dataplane.Version + "." + dataplane.Group},
			"spec": map[string]any{
				"group": dataplane.Group, "version": dataplane.Version,
				"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
				"service":  map[string]any{"namespace": dataplaneNamespace, "name": dataplaneService, "port": int64(d.Port)},
				"caBundle": base64.StdEncoding.EncodeToString(caBundle),
			},
		},
	}
	for _, obj := range objects {
		u := &unstructured.Unstructured{Object: obj}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("dockside-dev"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying the data plane's %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
