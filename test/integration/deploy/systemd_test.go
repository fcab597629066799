//go:build integration

package deploy_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
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
// kubeconfig, which must authenticate as the host's own ServiceAccount, dockside-agent-<host>, with the agent's
// permissions, through a token that deleting that ServiceAccount revokes.
func systemdSpecs() {
	var agentKubeconfig string

	BeforeAll(func() {
		script := exec.Command(filepath.Join(repoRoot, "config", "systemd", "agent-kubeconfig.sh"), systemdHost, "1h")
		script.Env = append(os.Environ(), "KUBECTL="+asAdmin.Path, "KUBECONFIG="+asAdmin.Kubeconfig)
		var stderr []byte
		out, err := script.Output()
		if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
			stderr = exitErr.Stderr
		}
		Expect(err).NotTo(HaveOccurred(), string(stderr))
		agentKubeconfig = filepath.Join(GinkgoT().TempDir(), "agent-kubeconfig")
		Expect(os.WriteFile(agentKubeconfig, out, 0o600)).To(Succeed())
	})

	asAgent := func(args ...string) (string, error) {
		return kubectl(append([]string{"--kubeconfig=" + agentKubeconfig}, args...)...)
	}

	It("authenticates as the host's own ServiceAccount, which names its node", func() {
		user, err := asAgent("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		Expect(err).NotTo(HaveOccurred())
		Expect(user).To(Equal("system:serviceaccount:" + namespace + ":" + agentName + "-" + systemdHost))
	})

	It("carries the agent's permissions", func() {
		out, err := asAgent("get", "sandboxes", "--all-namespaces")
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = asAgent("auth", "can-i", "update", "leases.coordination.k8s.io", "-n", namespace)
		Expect(err).NotTo(HaveOccurred(), out)
		out, err = asAgent("get", "pods", "--all-namespaces")
		Expect(err).To(MatchError(ContainSubstring("forbidden")), out)
	})

	It("is confined to its node: it holds that node's Lease and no other", func() {
		lease := func(node string) string {
			return "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: dockside-agent-" + node +
				", namespace: " + namespace + "}\nspec: {holderIdentity: test}\n"
		}
		other := filepath.Join(GinkgoT().TempDir(), "lease.yaml")
		Expect(os.WriteFile(other, []byte(lease("another-host")), 0o600)).To(Succeed())
		_, err := asAgent("create", "-f", other)
		Expect(err).To(MatchError(ContainSubstring("may hold only the Lease " + agentName + "-" + systemdHost)))
		own := filepath.Join(GinkgoT().TempDir(), "lease.yaml")
		Expect(os.WriteFile(own, []byte(lease(systemdHost)), 0o600)).To(Succeed())
		out, err := asAgent("create", "-f", own)
		Expect(err).NotTo(HaveOccurred(), out)
		_, err = kubectl("delete", "-f", own)
		Expect(err).NotTo(HaveOccurred())
	})

	// Deleting the ServiceAccount revokes the token (the API server refuses it once its 10s token cache expires);
	// waiting that out would slow the suite down, so the token's claims are read instead.
	It("is the token of that ServiceAccount, so that deleting it revokes the host", func() {
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
				ServiceAccount struct{ Name, UID string } `json:"serviceaccount"`
			} `json:"kubernetes.io"`
		}
		Expect(json.Unmarshal(payload, &claims)).To(Succeed())
		Expect(claims.Kubernetes.ServiceAccount.Name).To(Equal(agentName + "-" + systemdHost))
		uid, err := kubectl("-n", namespace, "get", "serviceaccount", agentName+"-"+systemdHost, "-o", "jsonpath={.metadata.uid}")
		Expect(err).NotTo(HaveOccurred())
		Expect(claims.Kubernetes.ServiceAccount.UID).To(Equal(uid))
	})
}
