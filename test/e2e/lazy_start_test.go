//go:build e2e

package e2e

import (
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Lazy start on real Docker (docs/design/lazy-start.md): a Sandbox with start: Lazy is Ready with nothing in
// Docker, and kubectl dockside exec builds its topology, waits for it and runs.
var _ = Describe("lazy start on real Docker", func() {
	It("is Ready with no container, and its first exec starts it and runs", func() {
		ns := newNamespace("lazy")
		DeferCleanup(func() { _, _ = kubectl("delete", "-n", ns, "sandbox", "later", "--ignore-not-found", "--timeout=90s") })
		apply(ns, `apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: later
spec:
  image: dockside.dev/busybox:local
  start: Lazy
`)
		waitFor(ns, "sandbox/later", "condition=Ready", 90*time.Second)
		Expect(field(ns, "sandbox/later", `{.status.conditions[?(@.type=="Ready")].reason}`)).To(Equal(dsv1alpha1.ReasonLazy))
		Expect(field(ns, "sandbox/later", "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxPending)))
		Expect(field(ns, "sandbox/later", "{.status.topologyGeneration}")).To(BeElementOf("", "0"))
		Expect(heldInDocker(ns, "later")).To(BeEmpty(), "nothing is built before the first command")
		Expect(kstatusOf(ns, "sandbox/later")).To(Equal(kstatus.CurrentStatus), "kstatus (Flux, kubectl wait) reads it done")
		expectHealth(installArgoHealthChecks(), ns, "sandbox/later", "Healthy", dsv1alpha1.ReasonLazy)

		res := dockside("exec", "", "-n", ns, "later", "--", "sh", "-c", "echo started > /workspace/note && cat /workspace/note")
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(res.stdout).To(Equal("started\n"))
		Expect(field(ns, "sandbox/later", `{.status.conditions[?(@.type=="Ready")].reason}`)).To(Equal(dsv1alpha1.ReasonRunning))
		Expect(field(ns, "sandbox/later", "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxRunning)))
		primary := onlyContainer(ns, "later", dsv1alpha1.RolePrimary)
		Expect(docker("inspect", "-f", "{{.State.Running}}", primary)).To(Equal("true"))

		res = dockside("exec", "", "-n", ns, "later", "--", "cat", "/workspace/note")
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(res.stdout).To(Equal("started\n"), "the second command runs in the same, started Sandbox")
		Expect(onlyContainer(ns, "later", dsv1alpha1.RolePrimary)).To(Equal(primary))

		deleteAndExpectGone(ns, "later")
	})
})
