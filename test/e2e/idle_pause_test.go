//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Idle pause on real Docker (docs/design/idle-pause.md): the agent freezes a session that ran no command
// for spec.idlePauseSeconds, and an exec through the data plane (or kubectl dockside resume) thaws it before
// it runs. 20 s of idleness leave the checks after the exec ample time before the next freeze, even on a
// loaded machine.
var _ = Describe("idle pause on real Docker", func() {
	It("freezes an idle session, and an exec thaws it with its process and files kept", func() {
		ns := newNamespace("idle")
		DeferCleanup(func() { _, _ = kubectl("delete", "-n", ns, "sandbox", "dozy", "--ignore-not-found", "--timeout=90s") })
		apply(ns, `apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: dozy
spec:
  image: dockside.dev/busybox:local
  idlePauseSeconds: 20
`)
		waitFor(ns, "sandbox/dozy", "condition=Ready", 90*time.Second)
		res := dockside("exec", "", "-n", ns, "dozy", "--", "sh", "-c", "echo kept > /workspace/note")
		Expect(res.code).To(Equal(0), res.stderr)
		primary := onlyContainer(ns, "dozy", dsv1alpha1.RolePrimary)
		started, err := docker("inspect", "-f", "{{.State.StartedAt}}", primary)
		Expect(err).NotTo(HaveOccurred())

		waitFor(ns, "sandbox/dozy", `jsonpath={.status.conditions[?(@.type=="Paused")].reason}=Idle`, 2*time.Minute)
		Expect(field(ns, "sandbox/dozy", "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxPaused)))
		Expect(field(ns, "sandbox/dozy", "{.spec.lifecycle}")).To(Equal(string(dsv1alpha1.LifecycleRunning)))
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("true"))

		res = dockside("exec", "", "-n", ns, "dozy", "--", "cat", "/workspace/note")
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(res.stdout).To(Equal("kept\n"), "the same files, thawed")
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("false"))
		Expect(docker("inspect", "-f", "{{.State.StartedAt}}", primary)).To(Equal(started), "the same process: thawed, not restarted")
		waitFor(ns, "sandbox/dozy", "jsonpath={.status.phase}=Running", time.Minute)
		Expect(onlyContainer(ns, "dozy", dsv1alpha1.RolePrimary)).To(Equal(primary), "no roll")

		By("kubectl dockside resume thaws it too, though its spec already says Running")
		waitFor(ns, "sandbox/dozy", `jsonpath={.status.conditions[?(@.type=="Paused")].reason}=Idle`, 2*time.Minute)
		res = dockside("resume", "", "-n", ns, "dozy")
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(res.stdout).To(Equal("sandbox/dozy resumed\n"))
		Expect(field(ns, "sandbox/dozy", "{.status.phase}")).To(Equal(string(dsv1alpha1.SandboxRunning)))
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("false"))

		deleteAndExpectGone(ns, "dozy")
	})

	It("is thawed by an Execution and by a files call, each then served", func() {
		ns := newNamespace("idle")
		DeferCleanup(func() { _, _ = kubectl("delete", "-n", ns, "sandbox", "drowsy", "--ignore-not-found", "--timeout=90s") })
		apply(ns, `apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: drowsy
spec:
  image: dockside.dev/busybox:local
  idlePauseSeconds: 20
`)
		waitFor(ns, "sandbox/drowsy", "condition=Ready", 90*time.Second)
		primary := onlyContainer(ns, "drowsy", dsv1alpha1.RolePrimary)
		idle := func() {
			GinkgoHelper()
			waitFor(ns, "sandbox/drowsy", `jsonpath={.status.conditions[?(@.type=="Paused")].reason}=Idle`, 2*time.Minute)
			Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("true"))
		}

		By("an Execution thaws it and runs")
		idle()
		apply(ns, execution("note", "drowsy", "echo by-execution > /workspace/note"))
		waitFor(ns, "execution/note", "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("false"))
		waitFor(ns, "sandbox/drowsy", "jsonpath={.status.phase}=Running", time.Minute)

		By("a files read (kubectl dockside cp) thaws it and reads what the Execution wrote")
		idle()
		local := filepath.Join(GinkgoT().TempDir(), "note")
		res := dockside("cp", "", "-n", ns, "drowsy:/workspace/note", local)
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(os.ReadFile(local)).To(Equal([]byte("by-execution\n")))
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("false"))
		waitFor(ns, "sandbox/drowsy", "jsonpath={.status.phase}=Running", time.Minute)
		Expect(onlyContainer(ns, "drowsy", dsv1alpha1.RolePrimary)).To(Equal(primary), "no roll")

		deleteAndExpectGone(ns, "drowsy")
	})
})
