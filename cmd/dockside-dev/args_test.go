package main

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
)

// The Makefile's run target, as it calls dockside-dev: the gateway's flags before `--`, the agent after.
func TestParseArgsGatewayAndAgent(t *testing.T) {
	cfg, err := parseArgs([]string{"-kubeconfig", ".local/kubeconfig", "-dataplane-port", "9443",
		"-e2b-gateway", "bin/dockside-e2b", "-e2b-listen", "127.0.0.1:3001",
		"--", "bin/dockside-agent", "--node-name=n1", "--e2b-listen=not-ours"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bin/dockside-agent", "--node-name=n1", "--e2b-listen=not-ours"}; !reflect.DeepEqual(cfg.agent, want) {
		t.Fatalf("agent = %q, want %q", cfg.agent, want)
	}
	if cfg.opts.Dataplane == nil || cfg.opts.Dataplane.Port != 9443 {
		t.Fatalf("data plane = %+v, want port 9443", cfg.opts.Dataplane)
	}
	got := cfg.gatewayArgv("/abs/kubeconfig")
	want := []string{"bin/dockside-e2b", "--kubeconfig=/abs/kubeconfig", "--listen=127.0.0.1:3001"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("gateway argv = %q, want %q", got, want)
	}
}

func TestParseArgsWithoutGateway(t *testing.T) {
	cfg, err := parseArgs([]string{"--", "agent"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if argv := cfg.gatewayArgv("k"); argv != nil {
		t.Fatalf("no -e2b-gateway runs no gateway, got %q", argv)
	}
	if cfg.gatewayListen != "127.0.0.1:3000" {
		t.Fatalf("default listen = %q, want loopback port 3000", cfg.gatewayListen)
	}
	hint := cfg.hint("/abs/kubeconfig")
	if !strings.Contains(hint, "export KUBECONFIG=/abs/kubeconfig") || strings.Contains(hint, "E2B_") {
		t.Fatalf("hint without a gateway = %q", hint)
	}
}

func TestParseArgsRefusesBadFlags(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseArgs([]string{"-dataplane-port", "99999"}, &out); err == nil {
		t.Fatal("a port above 65535 was taken")
	}
	if !strings.Contains(out.String(), "usage: dockside-dev") {
		t.Fatalf("no usage after a bad flag: %q", out.String())
	}
	if _, err := parseArgs([]string{"-h"}, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h = %v, want flag.ErrHelp (main exits 0 on it)", err)
	}
}

// The hint names every variable E2B's SDKs read, at the gateway's address, and how to make the key.
func TestHintWithGateway(t *testing.T) {
	cfg, err := parseArgs([]string{"-e2b-gateway", "bin/dockside-e2b", "-e2b-listen", "127.0.0.1:3005"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	hint := cfg.hint("/abs/kubeconfig")
	for _, want := range []string{
		"export KUBECONFIG=/abs/kubeconfig\n",
		"export E2B_API_URL=http://127.0.0.1:3005\n",
		"export E2B_SANDBOX_URL=http://127.0.0.1:3005\n",
		"export E2B_API_KEY=$(kubectl create token ",
		"docs/e2b.md",
	} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint lacks %q:\n%s", want, hint)
		}
	}
	// kubectl create token needs KUBECONFIG first.
	if strings.Index(hint, "KUBECONFIG") > strings.Index(hint, "E2B_API_KEY") {
		t.Errorf("KUBECONFIG comes after the key:\n%s", hint)
	}
}

// With a domain and a certificate the gateway serves HTTPS and host routing, and the hint says so: https
// URLs, E2B_DOMAIN and the certificate to trust; a certificate without its key is refused.
func TestGatewayDomainAndTLS(t *testing.T) {
	cfg, err := parseArgs([]string{"-e2b-gateway", "bin/dockside-e2b", "-e2b-listen", "127.0.0.1:3443",
		"-e2b-domain", "e2b.localhost", "-e2b-tls-cert", "/pki/tls.crt", "-e2b-tls-key", "/pki/tls.key"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.gatewayArgv("/abs/kubeconfig")
	want := []string{"bin/dockside-e2b", "--kubeconfig=/abs/kubeconfig", "--listen=127.0.0.1:3443",
		"--domain=e2b.localhost", "--tls-cert-file=/pki/tls.crt", "--tls-key-file=/pki/tls.key"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("gateway argv = %q, want %q", got, want)
	}
	hint := cfg.hint("/abs/kubeconfig")
	for _, want := range []string{
		"export E2B_API_URL=https://127.0.0.1:3443\n",
		"export E2B_SANDBOX_URL=https://127.0.0.1:3443\n",
		"export E2B_DOMAIN=e2b.localhost\n",
		"export SSL_CERT_FILE=/pki/tls.crt\n",
	} {
		if !strings.Contains(hint, want) {
			t.Errorf("hint lacks %q:\n%s", want, hint)
		}
	}
	if _, err := parseArgs([]string{"-e2b-tls-cert", "/pki/tls.crt"}, &bytes.Buffer{}); err == nil {
		t.Fatal("a certificate without its key was taken")
	}
}
