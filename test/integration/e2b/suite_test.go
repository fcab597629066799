//go:build integration

// Package e2b_test checks the E2B gateway's mapping onto Dockside's objects against a real kube-apiserver
// (envtest): what create, list, get, timeout, pause, connect and kill make of Sandboxes and SandboxClaims,
// and that a key is its ServiceAccount's identity, RBAC deciding what it may do (docs/e2b.md). No agent runs:
// the specs mark Sandboxes Ready and bind claims as an agent would.
package e2b_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dockside-dev/dockside/internal/e2b"
	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/envtestenv"
)

var (
	env     *envtestenv.Env
	k8s     client.Client
	gateway *httptest.Server
)

func TestE2B(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "E2B gateway (against a real API server)")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(GinkgoLogr)
	var err error
	env, err = envtestenv.Start(localcluster.Options{})
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
	// The admin's credentials in env.Config are dropped by the gateway: every call carries the caller's key.
	g, err := e2b.New(e2b.Options{API: env.Config, Scheme: env.Scheme, CreateWait: time.Minute})
	Expect(err).NotTo(HaveOccurred())
	gateway = httptest.NewServer(g)
	SetDefaultEventuallyTimeout(30 * time.Second)
})

var _ = AfterSuite(func() {
	if gateway != nil {
		gateway.Close()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func ctx() context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	DeferCleanup(cancel)
	return c
}
