//go:build integration

// Package deploy_test checks the deployment manifests against a real kube-apiserver (envtest): config/default
// renders with kubectl's kustomize, the API server accepts every object, the DaemonSet keeps the agent locked
// down, and the agent's ServiceAccount may do what the agent needs and nothing it does not.
// Run with KUBEBUILDER_ASSETS=$(bash hack/build-controlplane.sh).
package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// repoRoot is the repository, seen from this package's folder.
var repoRoot = filepath.Join("..", "..", "..")

var (
	testEnv     *envtest.Environment
	adminConfig *rest.Config // an admin of the cluster, the base of the identities that specs impersonate
	k8s         client.Client
	kubectlPath string
	kubeconfig  string
)

func TestDeploy(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "deploy (config/default against a real API server)")
}

var _ = BeforeSuite(func() {
	// No CRDs up front: installing them is part of what config/default does.
	testEnv = &envtest.Environment{}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	adminConfig = cfg
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// kubectl runs as a cluster admin, as the person deploying Dockside would.
	admin, err := testEnv.AddUser(envtest.User{Name: "deployer", Groups: []string{"system:masters"}}, cfg)
	Expect(err).NotTo(HaveOccurred())
	config, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(kubeconfig, config, 0o600)).To(Succeed())
	kubectlPath = testEnv.ControlPlane.KubectlPath
})

var _ = AfterSuite(func() {
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// kubectl runs the kubectl built with the control plane, as the admin, and returns its standard output.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(kubectlPath, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}
