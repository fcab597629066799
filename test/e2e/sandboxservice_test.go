//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("SandboxService on real Docker", func() {
	It("cannot be deleted while a Sandbox uses it: the deletion waits until that Sandbox is gone", func() {
		ns := newNamespace("svc-protect")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata:
  name: helper
spec:
  image: dockside.dev/busybox:local
  command: ["sleep", "3600"]
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: user
spec:
  image: dockside.dev/busybox:local
  services: ["helper"]
`)
		waitFor(ns, "sandbox/user", "condition=Ready", 60*time.Second)
		waitFor(ns, "sandboxservice/helper", "condition=InUse", time.Minute)
		Expect(field(ns, "sandboxservice/helper", "{.status.usedBy}")).To(Equal(`["user"]`))
		Expect(field(ns, "sandboxservice/helper", "{.status.usedByCount}")).To(Equal("1"))
		service := onlyContainer(ns, "user", "service")

		_, err := kubectl("delete", "-n", ns, "sandboxservice/helper", "--wait=false")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string {
			return field(ns, "sandboxservice/helper", `{.status.conditions[?(@.type=="InUse")].message}`)
		}, time.Minute, 200*time.Millisecond).Should(Equal("deletion waits until no Sandbox names it; used by Sandbox user"))
		Consistently(func() error {
			_, err := kubectl("get", "-n", ns, "sandboxservice/helper")
			return err
		}, 2*time.Second, 500*time.Millisecond).Should(Succeed())
		Expect(field(ns, "sandbox/user", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))
		Expect(onlyContainer(ns, "user", "service")).To(Equal(service), "the Sandbox keeps its instance meanwhile")

		deleteAndExpectGone(ns, "user")
		_, err = kubectl("wait", "-n", ns, "sandboxservice/helper", "--for=delete", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred())
	})
})
