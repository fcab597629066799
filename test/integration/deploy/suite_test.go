//go:build integration

// Package deploy_test checks the deployment manifests against a real kube-apiserver (envtest): config/default
// renders with kubectl's kustomize, the API server accepts every object, the DaemonSet keeps the agent locked
// down, and the agent's ServiceAccount may do what the agent needs and nothing it does not.
// Run with KUBEBUILDER_ASSETS=$(bash hack/build-controlplane.sh).
package deploy_test

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/kubectlcli"
)

// repoRoot is the repository, seen from this package's folder.
var repoRoot = filepath.Join("..", "..", "..")

var (
	cp          *localcluster.ControlPlane
	adminConfig *rest.Config // an admin of the cluster, the base of the identities that specs impersonate
	k8s         client.Client
	// asAdmin is kubectl acting as a cluster admin, as the person deploying Dockside would.
	asAdmin kubectlcli.Kubectl
)

func TestDeploy(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "deploy (config/default against a real API server)")
}

var _ = BeforeSuite(func() {
	// No CRDs up front: installing them is part of what config/default does.
	var err error
	cp, err = localcluster.Start(localcluster.Options{KubeconfigPath: filepath.Join(GinkgoT().TempDir(), "kubeconfig")})
	Expect(err).NotTo(HaveOccurred())
	adminConfig = cp.Config
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cp.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	asAdmin = kubectlcli.Kubectl{Path: cp.KubectlPath, Kubeconfig: cp.Kubeconfig}
})

var _ = AfterSuite(func() {
	if cp != nil {
		Expect(cp.Stop()).To(Succeed())
	}
})

// kubectl runs kubectl as the admin and returns its standard output.
func kubectl(args ...string) (string, error) { return asAdmin.Run(args...) }
