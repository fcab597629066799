package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dockside-dev/dockside/internal/localcluster"
)

// runConfig is what a run starts, from its command line.
type runConfig struct {
	opts      localcluster.Options
	pidFile   string
	peerNodes []string
	// agent is the agent's command line, after `--`; empty runs none.
	agent []string
	// gatewayBin is the E2B gateway's binary (docs/e2b.md); empty runs none. It serves on gatewayListen.
	gatewayBin    string
	gatewayListen string
	// gatewayDomain, gatewayCert and gatewayKey give the gateway --domain and a certificate (docs/e2b.md,
	// "TLS"); empty, it serves plain HTTP with no domain.
	gatewayDomain, gatewayCert, gatewayKey string
}

// parseArgs reads a run's flags; errors (and -h) are reported on out with the usage.
func parseArgs(args []string, out io.Writer) (runConfig, error) {
	// A flag set of our own: controller-runtime registers a global -kubeconfig flag with another meaning.
	fs := flag.NewFlagSet("dockside-dev", flag.ContinueOnError)
	fs.SetOutput(out)
	cfg := runConfig{}
	fs.StringVar(&cfg.opts.DataDir, "data-dir", ".local/etcd", "etcd data folder, kept across runs")
	fs.StringVar(&cfg.opts.KubeconfigPath, "kubeconfig", ".local/kubeconfig", "where to write the admin kubeconfig")
	fs.StringVar(&cfg.opts.CRDDir, "crds", "config/crd/bases", "folder of CRD manifests to install")
	fs.StringVar(&cfg.pidFile, "pid-file", ".local/run.pids", "where to record the processes of this run")
	dp := localcluster.Dataplane{}
	fs.Func("dataplane-port", "loopback port of the agent's data plane, which kube-apiserver proxies subresources.dockside.dev to (the agent's --dataplane-bind-address=127.0.0.1:PORT); 0 sets none up", func(v string) error {
		port, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return fmt.Errorf("not a port: %w", err)
		}
		dp.Port = int32(port)
		return nil
	})
	fs.StringVar(&dp.CertDir, "cert-dir", ".local/pki", "where the front proxy's and the data plane's certificates are made at each start (the agent's --dataplane-cert-dir is its dataplane/ folder)")
	fs.Func("peer-node", "a node whose agent gets a peer certificate of its own in <cert-dir>/peers/NODE (the agent's --dataplane-peer-cert-dir); repeat it for several", func(v string) error {
		cfg.peerNodes = append(cfg.peerNodes, v)
		return nil
	})
	fs.StringVar(&cfg.gatewayBin, "e2b-gateway", "", "the E2B gateway's binary (bin/dockside-e2b), run with the kubeconfig until the run ends; empty runs none")
	fs.StringVar(&cfg.gatewayListen, "e2b-listen", "127.0.0.1:3000", "address the E2B gateway serves on (plain HTTP without -e2b-tls-cert: keep it on loopback)")
	fs.StringVar(&cfg.gatewayDomain, "e2b-domain", "", "the E2B gateway's --domain (E2B_DOMAIN: hosts <port>-<sandboxID>.<domain>); empty: none")
	fs.StringVar(&cfg.gatewayCert, "e2b-tls-cert", "", "PEM certificate the E2B gateway serves HTTPS with (with -e2b-tls-key); empty: plain HTTP")
	fs.StringVar(&cfg.gatewayKey, "e2b-tls-key", "", "PEM key of -e2b-tls-cert")
	fs.Usage = func() {
		fmt.Fprintln(out, "usage: dockside-dev [flags] [-- agent command...] | dockside-dev stop [-pid-file F]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return runConfig{}, fmt.Errorf("reading the command line: %w", err)
	}
	if (cfg.gatewayCert == "") != (cfg.gatewayKey == "") {
		fs.Usage()
		return runConfig{}, errors.New("-e2b-tls-cert and -e2b-tls-key go together")
	}
	if dp.Port != 0 {
		cfg.opts.Dataplane = &dp
	}
	cfg.agent = fs.Args()
	return cfg, nil
}

// gatewayArgv is the E2B gateway's command line, or nil when the run has none.
func (c runConfig) gatewayArgv(kubeconfig string) []string {
	if c.gatewayBin == "" {
		return nil
	}
	argv := []string{c.gatewayBin, "--kubeconfig=" + kubeconfig, "--listen=" + c.gatewayListen}
	if c.gatewayDomain != "" {
		argv = append(argv, "--domain="+c.gatewayDomain)
	}
	if c.gatewayCert != "" {
		argv = append(argv, "--tls-cert-file="+c.gatewayCert, "--tls-key-file="+c.gatewayKey)
	}
	return argv
}

// hint is what a person pastes into another terminal to reach the run: kubectl's kubeconfig and, with the
// gateway, the variables of E2B's SDKs. The key is a ServiceAccount's token (docs/e2b.md, "Keys are Kubernetes
// identities", makes the ServiceAccount and its Role).
func (c runConfig) hint(kubeconfig string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ">> control plane is up. In another terminal:\n\n    export KUBECONFIG=%s\n\n", kubeconfig)
	if c.gatewayBin != "" {
		url := "http://" + c.gatewayListen
		if c.gatewayCert != "" {
			url = "https://" + c.gatewayListen
		}
		fmt.Fprintf(&b, ">> E2B's SDKs reach the gateway with (the key is a ServiceAccount's token, docs/e2b.md):\n\n"+
			"    export E2B_API_URL=%s\n    export E2B_SANDBOX_URL=%s\n", url, url)
		if c.gatewayDomain != "" {
			fmt.Fprintf(&b, "    export E2B_DOMAIN=%s\n", c.gatewayDomain)
		}
		if c.gatewayCert != "" { // the clients must trust it (docs/e2b.md, "TLS")
			fmt.Fprintf(&b, "    export SSL_CERT_FILE=%s\n", absPath(c.gatewayCert))
		}
		fmt.Fprintf(&b, "    export E2B_API_KEY=$(kubectl create token agent -n team-a --duration=24h)\n\n")
	}
	return b.String()
}
