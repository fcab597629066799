//go:build integration

package deploy_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// systemdHost stands for a Docker host outside the cluster whose agent systemd runs.
const systemdHost = "docker-host-1"

// systemdSpecs follow docs/deploy.md for an agent run by systemd: config/systemd/agent-kubeconfig.sh makes its
// kubeconfig, which must authenticate as the agent's ServiceAccount with the agent's permissions, through a
// token that deleting the host's Secret revokes.
func systemdSpecs() {
	var agentKubeconfig string

	BeforeAll(func() {
		script := exec.Command(filepath.Join(repoRoot, "config", "systemd", "agent-kubeconfig.sh"), systemdHost, "1h")
		script.Env = append(os.Environ(), "KUBECTL="+kubectlPath, "KUBECONFIG="+kubeconfig)
		var stderr []byte
		out, err := script.Output()
		if exitErr, ok := err.(*exec.ExitError); ok {
			stderr = exitErr.Stderr
		}
		Expect(err).NotTo(HaveOccurred(), string(stderr))
		agentKubeconfig = filepath.Join(GinkgoT().TempDir(), "agent-kubeconfig")
		Expect(os.WriteFile(agentKubeconfig, out, 0o600)).To(Succeed())
	})

	asAgent := func(args ...string) (string, error) {
		return kubectl(append([]string{"--kubeconfig=" + agentKubeconfig}, args...)...)
	}

	It("authenticates as the dockside-agent ServiceAccount", func() {
		user, err := asAgent("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		Expect(err).NotTo(HaveOccurred())
		Expect(user).To(Equal("system:serviceaccount:" + namespace + ":" + agentName))
	})

	It("carries the agent's permissions", func() {
		out, err := asAgent("get", "sandboxes", "--all-namespaces")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = asAgent("get", "pods", "--all-namespaces")
		Expect(err).To(MatchError(ContainSubstring("forbidden")), out)
	})

	// Deleting the Secret revokes the token (the API server refuses it once its 10s token cache expires); waiting
	// that out would slow the suite down, so the binding is read from the token's claims instead.
	It("is bound to the host's Secret, so that deleting the Secret revokes it", func() {
		var config struct {
			Users []struct {
				User struct{ Token string } `json:"user"`
			} `json:"users"`
		}
		data, err := os.ReadFile(agentKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(data, &config)).To(Succeed())
		Expect(config.Users).To(HaveLen(1))
		parts := strings.Split(config.Users[0].User.Token, ".")
		Expect(parts).To(HaveLen(3), "not a JWT")
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		Expect(err).NotTo(HaveOccurred())
		var claims struct {
			Kubernetes struct {
				Secret struct{ Name string } `json:"secret"`
			} `json:"kubernetes.io"`
		}
		Expect(json.Unmarshal(payload, &claims)).To(Succeed())
		Expect(claims.Kubernetes.Secret.Name).To(Equal("dockside-agent-" + systemdHost))
	})
}
