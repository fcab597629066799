//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/kubectlcli"
)

// pythonClientDir holds the Python client (clients/python/README.md).
var pythonClientDir = filepath.Join("..", "..", "clients", "python")

// python is the interpreter that has the kubernetes module (Debian's python3-kubernetes, which
// hack/ensure-python.sh installs and names in DOCKSIDE_PYTHON for make).
func python() string {
	if p := os.Getenv("DOCKSIDE_PYTHON"); p != "" {
		return p
	}
	return "/usr/bin/python3"
}

// redisService is the redis SandboxService of config/samples with a readiness check that a loaded 2-core
// machine passes: the sample's 1 s for `redis-cli ping` through docker exec, 5 times in a row, is not always enough here.
const redisService = `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata:
  name: redis
spec:
  image: dockside.dev/redis:local
  command: ["redis-server"]
  args: ["--save", "", "--appendonly", "no", "--protected-mode", "no", "--bind", "0.0.0.0", "--dir", "/tmp"]
  ports:
    - name: redis
      port: 6379
  readiness:
    command: ["redis-cli", "ping"]
    periodSeconds: 5
    timeoutSeconds: 5
    failureThreshold: 6
  resources:
    cpu: 250m
    memory: 128Mi
    pids: 64
`

var _ = Describe("The Python client on real Docker", func() {
	It("runs its end-to-end module against the agent and leaves nothing behind", func() {
		ns := newNamespace("python")
		apply(ns, redisService)
		runPythonModule(ns, "e2e.test_client_e2e")
		_, err := kubectl("delete", "-n", ns, "sandboxservice", "redis")
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs code, terminals, cancels and the agent framework provider against the agent", func() {
		runPythonModule(newNamespace("python-agents"), "e2e.test_agents_e2e")
	})
})

// runPythonModule runs a unittest module of clients/python against the suite's control plane, in namespace ns
// (the current context's of a kubeconfig of its own: the client must find it there, as kubectl does), then
// checks that nothing it made is left in the API or labelled in Docker.
func runPythonModule(ns, module string) {
	kubeconfig := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	admin, err := os.ReadFile(cp.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	Expect(os.WriteFile(kubeconfig, admin, 0o600)).To(Succeed())
	_, err = kubectlcli.Kubectl{Path: cp.KubectlPath, Kubeconfig: kubeconfig}.Run("config", "set-context", "--current", "--namespace="+ns)
	Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python(), "-m", "unittest", "-v", module)
	cmd.Dir = pythonClientDir
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	AddReportEntry("python -m unittest "+module, string(out))
	Expect(err).NotTo(HaveOccurred(), "%s", out)

	left, err := kubectl("get", "-n", ns, "sandboxes,checkpoints,executions", "-o", "name")
	Expect(err).NotTo(HaveOccurred())
	Expect(strings.Fields(left)).To(BeEmpty(), "the client deletes what it created")
	Expect(containers(ns, "", "")).To(BeEmpty())
	for _, kind := range []string{"network", "volume"} {
		out, err := docker(kind, "ls", "-q", "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Fields(out)).To(BeEmpty(), "%ss left in %s", kind, ns)
	}
}
