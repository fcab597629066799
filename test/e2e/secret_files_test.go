//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

var _ = Describe("secretFiles on real Docker", func() {
	It("puts the value in a file of the primary and nowhere else: not in docker inspect, an Execution's environment, status, Events or the agent's log", func() {
		ns := newNamespace("secret-files")
		value := fmt.Sprintf("e2e-secret-%d", time.Now().UnixNano())
		apply(ns, secretManifest(value)+"---\n"+secretFilesSandbox("box", "visible"))
		waitFor(ns, "sandbox/box", "condition=Ready", 90*time.Second)
		primary := onlyContainer(ns, "box", dsv1alpha1.RolePrimary)

		Expect(docker("exec", primary, "cat", "/run/secrets/dockside/token")).To(Equal(value))
		Expect(docker("exec", primary, "cat", "/run/secrets/dockside/cloud/credentials")).To(Equal(value))
		Expect(docker("exec", primary, "stat", "-c", "%a %u", "/run/secrets/dockside/token")).To(Equal("400 65532"),
			"readable by the primary's own user alone")
		_, err := docker("exec", primary, "sh", "-c", "echo x > /run/secrets/dockside/token")
		Expect(err).To(HaveOccurred(), "the files are read-only in the primary")
		Expect(docker("exec", primary, "sh", "-c", "grep ' /run/secrets/dockside ' /proc/mounts")).To(ContainSubstring("tmpfs"), "memory-backed")

		apply(ns, execution("env", "box", "env"))
		waitFor(ns, "execution/env", "jsonpath={.status.phase}=Succeeded", time.Minute)
		env := field(ns, "execution/env", "{.status.stdout}")
		Expect(env).To(ContainSubstring("PLAIN=visible"), "the Execution's environment was captured")
		Expect(env).NotTo(ContainSubstring(value))

		// The secrets holder goes once the primary runs; what is left of the Sandbox shows the value nowhere.
		Eventually(func() []string { return secretsHolders(ns) }, time.Minute, time.Second).Should(BeEmpty())
		Eventually(func() []string { return containers(ns, "box", "") }, time.Minute, time.Second).Should(HaveLen(2), "primary and workspace holder")
		Expect(docker("inspect", primary)).To(ContainSubstring("PLAIN=visible"), "docker inspect shows what env holds")
		for _, id := range containers(ns, "box", "") {
			Expect(docker("inspect", id)).NotTo(ContainSubstring(value), "docker inspect %s", id)
			Expect(docker("logs", id)).NotTo(ContainSubstring(value), "docker logs %s", id)
		}
		Expect(kubectl("get", "-n", ns, "sandbox/box", "-o", "yaml")).NotTo(ContainSubstring(value))
		Expect(kubectl("get", "-n", ns, "events", "-o", "yaml")).NotTo(ContainSubstring(value))
		Expect(kubectl("get", "-n", ns, "events", "-o", "yaml")).To(ContainSubstring(secretFilesWrittenEvent))
		log, err := os.ReadFile(agent.Log)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).NotTo(ContainSubstring(value))

		deleteAndExpectGone(ns, "box")
	})

	It("waits for a missing Secret with nothing started, and a roll writes the Secret's new value", func() {
		ns := newNamespace("secret-files-wait")
		apply(ns, secretFilesSandbox("box", "first"))
		waitFor(ns, "sandbox/box", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}=SecretNotFound`, time.Minute)
		Expect(field(ns, "sandbox/box", `{.status.conditions[?(@.type=="Ready")].message}`)).To(ContainSubstring(`needs Secret "creds"`))
		Expect(containers(ns, "box", "")).To(BeEmpty(), "no container is started without the Secret")

		apply(ns, secretManifest("one"))
		waitFor(ns, "sandbox/box", "condition=Ready", 2*time.Minute) // Secrets are not watched: looked for again
		Expect(docker("exec", onlyContainer(ns, "box", dsv1alpha1.RolePrimary), "cat", "/run/secrets/dockside/token")).To(Equal("one"))

		apply(ns, secretManifest("two"))
		apply(ns, secretFilesSandbox("box", "second")) // a spec change rolls the topology
		waitFor(ns, "sandbox/box", "jsonpath={.status.topologyGeneration}=2", time.Minute)
		waitFor(ns, "sandbox/box", "condition=Ready", 90*time.Second)
		Expect(docker("exec", onlyContainer(ns, "box", dsv1alpha1.RolePrimary), "cat", "/run/secrets/dockside/token")).To(Equal("two"))

		deleteAndExpectGone(ns, "box")
	})
})

// secretFilesWrittenEvent is the reason of the Event the agent records when it writes a start's secret files.
const secretFilesWrittenEvent = "SecretFilesWritten"

// secretManifest is Secret creds holding value under key token.
func secretManifest(value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  token: %q\n", value)
}

// secretFilesSandbox is a busybox session with the token of Secret creds at two paths and a plain env var.
func secretFilesSandbox(name, plain string) string {
	return fmt.Sprintf(`apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: %s
spec:
  image: dockside.dev/busybox:local
  env: [{name: PLAIN, value: %s}]
  secretFiles:
  - {secretName: creds, key: token, path: token}
  - {secretName: creds, key: token, path: cloud/credentials}
`, name, plain)
}

// secretsHolders lists the secrets holders of a namespace's Sandboxes.
func secretsHolders(ns string) []string {
	GinkgoHelper()
	var out []string
	for _, id := range containers(ns, "", dsv1alpha1.RoleHolder) {
		service, err := docker("inspect", "-f", `{{index .Config.Labels "`+dsv1alpha1.LabelService+`"}}`, id)
		Expect(err).NotTo(HaveOccurred())
		if strings.TrimSpace(service) == "secrets" {
			out = append(out, id)
		}
	}
	return out
}
