//go:build e2e

package e2e

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// pullSecret makes a kubernetes.io/dockerconfigjson Secret the way users do.
func pullSecret(ns, name, registry, user, password string) {
	GinkgoHelper()
	_, err := kubectl("create", "secret", "docker-registry", name, "-n", ns,
		"--docker-server="+registry, "--docker-username="+user, "--docker-password="+password)
	Expect(err).NotTo(HaveOccurred())
}

// privateSandbox is a Sandbox of image with imagePullSecret secret ("": none).
func privateSandbox(ns, name, image, secret string) {
	GinkgoHelper()
	manifest := fmt.Sprintf(`
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: %s
spec:
  image: %s
`, name, image)
	if secret != "" {
		manifest += fmt.Sprintf("  imagePullSecret:\n    name: %s\n", secret)
	}
	apply(ns, manifest)
}

var _ = Describe("Pull credentials stay in their namespace, on real Docker and a registry on loopback", func() {
	It("lets another namespace use an image pulled with one namespace's credentials only with its own, verified", func() {
		reg := startRegistry("dockside.dev/busybox:local", "e2e/private", "1", map[string]string{"team-a": "a-pw", "team-b": "b-pw"})
		image := reg.Image()
		DeferCleanup(func() {
			// The node's copy goes too: by its name, which removes the tag and leaves the local build it shares
			// its content with.
			_, err := docker("image", "rm", image)
			Expect(err).NotTo(HaveOccurred())
		})

		By("namespace A pulling it with its credentials and running it")
		teamA := newNamespace("pull-a")
		pullSecret(teamA, "regcred", reg.Addr, "team-a", "a-pw")
		privateSandbox(teamA, "first", image, "regcred")
		waitFor(teamA, "sandbox/first", "condition=Ready", 2*time.Minute)
		Expect(eventReasons(teamA, "first")).To(ContainElements("Pulling", "Pulled"))
		Expect(reg.ManifestsServed("team-a")).To(BeNumerically(">=", 1))

		By("namespace B without credentials: refused, nothing started")
		teamB := newNamespace("pull-b")
		privateSandbox(teamB, "bare", image, "")
		waitFor(teamB, "sandbox/bare", `jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=ImagePullCredentialsRequired`, time.Minute)
		Expect(field(teamB, "sandbox/bare", "{.status.phase}")).To(Equal("Failed"))
		Expect(field(teamB, "sandbox/bare", `{.status.conditions[?(@.type=="Stalled")].message}`)).To(And(
			ContainSubstring("image "+image+" of the primary container is present on node "+node+" but this namespace's credentials were not verified for it"),
			ContainSubstring("without credentials (no imagePullSecret)")))
		Expect(containers(teamB, "bare", "")).To(BeEmpty())

		By("namespace B with wrong credentials: refused, nothing started")
		pullSecret(teamB, "wrong", reg.Addr, "team-b", "not-the-password")
		privateSandbox(teamB, "wrong", image, "wrong")
		waitFor(teamB, "sandbox/wrong", `jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=ImagePullCredentialsRequired`, time.Minute)
		Expect(field(teamB, "sandbox/wrong", `{.status.conditions[?(@.type=="Stalled")].message}`)).To(
			ContainSubstring(`its registry refused a pull with imagePullSecret "wrong" (the registry refused the credentials)`))
		Expect(field(teamB, "sandbox/wrong", "{.status}")).NotTo(ContainSubstring("not-the-password"))
		Expect(containers(teamB, "wrong", "")).To(BeEmpty())
		Expect(eventReasons(teamB, "wrong")).To(ContainElement("PullFailed"))

		By("namespace B with valid credentials of its own: verified with the registry, and it runs")
		pullSecret(teamB, "regcred", reg.Addr, "team-b", "b-pw")
		privateSandbox(teamB, "own", image, "regcred")
		waitFor(teamB, "sandbox/own", "condition=Ready", 2*time.Minute)
		Expect(reg.ManifestsServed("team-b")).To(BeNumerically(">=", 1), "the registry was asked with team B's credentials")

		for ns, names := range map[string][]string{teamA: {"first"}, teamB: {"bare", "wrong", "own"}} {
			for _, name := range names {
				deleteAndExpectGone(ns, name)
			}
		}
	})
})
