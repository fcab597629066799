package dataplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// Files in Options.PeerCertDir: this agent's own identity towards the other agents (decision 0030).
const (
	PeerCertFile = "peer.crt" // common name PeerCommonName(node), client usage, signed by the agents' CA (CAFile)
	PeerKeyFile  = "peer.key"
)

// certificates are the data plane's certificates and CA, each read again when its file changes (and at least
// every minute), so that a rotated certificate or CA is used without a restart (docs/design/dataplane.md,
// "Certificates").
type certificates struct {
	serving *dynamiccertificates.DynamicCertKeyPairContent
	ca      *dynamiccertificates.DynamicFileCAContent
	peer    *dynamiccertificates.DynamicCertKeyPairContent // nil: this agent has no peer certificate, so forwards nothing
	tls     *dynamiccertificates.DynamicServingCertificateController
}

// loadCertificates reads the serving certificate and the CA from certDir and the peer certificate, when
// there is one, from peerDir; the peer certificate must name node.
func loadCertificates(certDir, peerDir, node string) (*certificates, error) {
	var c certificates
	var err error
	if c.serving, err = dynamiccertificates.NewDynamicServingContentFromFiles("dataplane-serving",
		filepath.Join(certDir, CertFile), filepath.Join(certDir, KeyFile)); err != nil {
		return nil, fmt.Errorf("the data plane's certificate: %w", err)
	}
	if c.ca, err = dynamiccertificates.NewDynamicCAContentFromFile("dataplane-agents-ca", filepath.Join(certDir, CAFile)); err != nil {
		return nil, fmt.Errorf("the data plane's CA: %w", err)
	}
	peerCert := filepath.Join(peerDir, PeerCertFile)
	switch _, err := os.Stat(peerCert); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("the agent's peer certificate: %w", err)
	default:
		if c.peer, err = dynamiccertificates.NewDynamicServingContentFromFiles("dataplane-peer", peerCert, filepath.Join(peerDir, PeerKeyFile)); err != nil {
			return nil, fmt.Errorf("the agent's peer certificate: %w", err)
		}
		got, err := certNode(c.peer)
		if err != nil {
			return nil, fmt.Errorf("the agent's peer certificate: %w", err)
		}
		if got != node {
			return nil, fmt.Errorf("%s must name this agent's node: common name %q, not that of node %q", peerCert, PeerCommonName(node), got)
		}
	}
	c.tls = dynamiccertificates.NewDynamicServingCertificateController(&tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified per request: the front proxy's CA and the agents' CA are two roots with two meanings.
		ClientAuth: tls.RequestClientCert,
		NextProtos: []string{"http/1.1"}, // streams upgrade the connection, which HTTP/2 cannot
	}, nil, c.serving, nil, nil)
	c.serving.AddListener(c.tls)
	if err := c.tls.RunOnce(); err != nil {
		return nil, fmt.Errorf("the data plane's certificate: %w", err)
	}
	return &c, nil
}

// run watches the files until ctx ends; it says so once when there is no peer certificate to watch.
func (c *certificates) run(ctx context.Context, log logr.Logger, peerDir string) {
	go c.serving.Run(ctx, 1)
	go c.ca.Run(ctx, 1)
	if c.peer != nil {
		go c.peer.Run(ctx, 1)
	} else {
		log.Info("No peer certificate: calls for other nodes' Sandboxes are answered 503 (docs/deploy.md, \"The data plane: exec through the API server\")",
			"missing", filepath.Join(peerDir, PeerCertFile))
	}
	go c.tls.Run(1, ctx.Done())
}

// serverConfig is the listener's TLS configuration: the serving certificate as it is now, at each handshake,
// and a client certificate required there that verify admits (the listener's bound, listener.go); which CA
// it chains to is each request's to check, since the two roots have two meanings.
func (c *certificates) serverConfig(verify func([][]byte, [][]*x509.Certificate) error) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			cfg, err := c.tls.GetConfigForClient(hello)
			if err != nil || cfg == nil {
				return cfg, err //nolint:wrapcheck // the TLS stack's own answer
			}
			cfg = cfg.Clone()
			cfg.ClientAuth, cfg.VerifyPeerCertificate = tls.RequireAnyClientCert, verify
			return cfg, nil
		},
	}
}

// agents verifies a client certificate against the agents' CA as it is now, for client auth.
func (c *certificates) agents() (x509.VerifyOptions, bool) { return c.ca.VerifyOptions() }

// clientConfig is what a forwarding agent dials a peer with: its own peer certificate, and the agents' CA as
// it is now for the peer's serving certificate, named serverName.
func (c *certificates) clientConfig(serverName string) (*tls.Config, error) {
	if c.peer == nil {
		return nil, fmt.Errorf("this agent has no peer certificate (%s and %s in --dataplane-peer-cert-dir), so it forwards nothing", PeerCertFile, PeerKeyFile)
	}
	opts, _ := c.ca.VerifyOptions()
	return &tls.Config{
		MinVersion: tls.VersionTLS12, RootCAs: opts.Roots, ServerName: serverName, NextProtos: []string{"http/1.1"},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			crt, key := c.peer.CurrentCertKeyContent()
			pair, err := tls.X509KeyPair(crt, key)
			if err != nil {
				return nil, fmt.Errorf("the agent's peer certificate: %w", err)
			}
			return &pair, nil
		},
	}, nil
}

// certNode is the node a peer certificate's common name names.
func certNode(c dynamiccertificates.CertKeyContentProvider) (string, error) {
	crt, key := c.CurrentCertKeyContent()
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return "", fmt.Errorf("reading it: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return "", fmt.Errorf("reading it: %w", err)
	}
	return nodeOfName(leaf.Subject.CommonName), nil
}
