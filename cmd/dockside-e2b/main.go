// Command dockside-e2b serves E2B's API (the control plane and the in-sandbox envd) in front of Dockside, so
// that agent frameworks that speak E2B's SDKs run their sandboxes on Dockside (docs/e2b.md). It holds no
// credential of its own: every call it makes to the API server carries the caller's key, a Kubernetes token.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/e2b"
	"github.com/dockside-dev/dockside/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dockside-e2b:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:3000", "address to serve E2B's API on (plain HTTP unless --tls-cert-file and --tls-key-file are given)")
	certFile := flag.String("tls-cert-file", "", "PEM certificate (chain) to serve HTTPS with, for the gateway's hosts: api.<domain> and *.<domain> (docs/e2b.md, \"TLS\")")
	keyFile := flag.String("tls-key-file", "", "PEM private key of --tls-cert-file")
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig naming the API server and its CA; its credentials are not used. Empty: in-cluster")
	namespace := flag.String("namespace", "", "namespace of a key whose identity is not a ServiceAccount")
	domain := flag.String("domain", "", "E2B domain (E2B_DOMAIN): sandboxes are answered with it, and hosts <port>-<sandboxID>.<domain> reach their ports; empty: clients use E2B_SANDBOX_URL")
	createWait := flag.Duration("create-wait", 2*time.Minute, "how long create, resume and connect wait for a Sandbox to be Ready")
	flag.Parse()
	ctrllog.SetLogger(zap.New())
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}

	cfg, err := apiConfig(*kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building the scheme: %w", err)
	}
	g, err := e2b.New(e2b.Options{API: cfg, Scheme: scheme, DefaultNamespace: *namespace, Domain: *domain, CreateWait: *createWait})
	if err != nil {
		return fmt.Errorf("building the gateway: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *listen, Handler: g, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	urlScheme := "http"
	serve := srv.ListenAndServe
	if *certFile != "" {
		// Loaded once: a renewed certificate is served after a restart (config/e2b rolls the Deployment).
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			return fmt.Errorf("reading the TLS certificate: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		urlScheme, serve = "https", func() error { return srv.ListenAndServeTLS("", "") }
	}
	fmt.Fprintf(os.Stderr, "dockside-e2b %s serving E2B's API on %s://%s\n", version.String(), urlScheme, *listen)
	if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// apiConfig is where the API server is and how to trust it, from a kubeconfig or the pod's own.
func apiConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no API server to talk to (set --kubeconfig or $KUBECONFIG): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	return cfg, nil
}
