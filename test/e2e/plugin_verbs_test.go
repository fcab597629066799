//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const busybox = "dockside.dev/busybox:local"

var _ = Describe("The kubectl plugin's verbs, through real kubectl", func() {
	It("pause and resume freeze and thaw a Sandbox, whose process goes on where it was", func() {
		ns := newNamespace("plugin-pause")
		session(ns, "box", busybox)
		primary, holder := onlyContainer(ns, "box", "primary"), heldWorkspace(ns, "box")
		// A process of the session's own that counts seconds into the workspace, read through the holder,
		// which is never frozen.
		_, err := docker("exec", "-d", primary, "sh", "-c", `echo $$ > /workspace/pid; while true; do echo t >> /workspace/ticks; sleep 1; done`)
		Expect(err).NotTo(HaveOccurred())
		ticks := func() int { return strings.Count(workspaceFile(holder, "ticks"), "t") }
		Eventually(ticks).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeNumerically(">=", 2))
		pid := strings.TrimSpace(workspaceFile(holder, "pid"))

		out := dockside("pause", "", "-n", ns, "box")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(Equal("sandbox/box paused\n"))
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("true"))
		Expect(field(ns, "sandbox/box", "{.status.phase}")).To(Equal("Paused"))
		frozen := ticks()
		Consistently(ticks, 3*time.Second, 500*time.Millisecond).Should(Equal(frozen), "nothing of a frozen Sandbox runs")

		out = dockside("resume", "", "-n", ns, "box")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(Equal("sandbox/box resumed\n"))
		Eventually(ticks).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeNumerically(">", frozen), "the same process counts on")
		Expect(docker("exec", primary, "sh", "-c", "kill -0 "+pid+" && echo alive")).To(Equal("alive"))

		out = dockside("pause", "", "-n", ns, "nothing-here")
		Expect(out.code).To(Equal(1))
		Expect(out.stderr).To(ContainSubstring(`"nothing-here" not found`))
		deleteAndExpectGone(ns, "box")
	})

	It("checkpoint prints the Checkpoint's size and digest, and restore gives a new Sandbox the same bytes", func() {
		ns := newNamespace("plugin-ckpt")
		session(ns, "src", busybox)
		inPrimary(ns, "src", "head -c 200000 /dev/urandom > /workspace/data.bin")
		sum := inPrimary(ns, "src", "md5sum /workspace/data.bin")

		out := dockside("checkpoint", "", "-n", ns, "src", "snap")
		Expect(out.code).To(Equal(0), out.stderr)
		digest := field(ns, "checkpoint/snap", "{.status.digest}")
		Expect(digest).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
		bytes, err := strconv.Atoi(field(ns, "checkpoint/snap", "{.status.sizeBytes}"))
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes).To(BeNumerically(">", 200000))
		Expect(out.stdout).To(Equal(fmt.Sprintf("name: snap\nsize: %s (%d bytes)\ndigest: %s\n",
			field(ns, "checkpoint/snap", "{.status.size}"), bytes, digest)))
		Expect(out.stdout).To(MatchRegexp(`size: \d+(\.\d)?Ki \(`), "about 200 KB reads in KiB")

		out = dockside("restore", "", "-n", ns, "snap", "copy")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(Equal("sandbox/copy restored from checkpoint/snap\n"))
		Expect(inPrimary(ns, "copy", "md5sum /workspace/data.bin")).To(Equal(sum))
		Expect(field(ns, "sandbox/copy", "{.spec.image}")).To(Equal(busybox), "the spec of the Sandbox it was taken of")

		out = dockside("checkpoint", "", "-n", ns, "nothing-here")
		Expect(out.code).To(Equal(1))
		Expect(out.stderr).To(ContainSubstring(`"nothing-here" not found`))
		out = dockside("restore", "", "-n", ns, "no-such-checkpoint", "other")
		Expect(out.code).To(Equal(1))
		out = dockside("restore", "", "-n", ns, "snap")
		Expect(out.code).To(Equal(2), "a usage error")
		Expect(out.stderr).To(ContainSubstring("Usage: kubectl dockside restore"))

		deleteAndExpectGone(ns, "copy")
		deleteAndExpectGone(ns, "src")
		deleteCheckpoint(ns, "snap")
	})

	It("logs prints a finished run's output, and says why a session has none", func() {
		ns := newNamespace("plugin-logs")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: job
spec:
  image: `+busybox+`
  command: [sh, -c, "sleep 2; echo hello from the run; echo and from stderr >&2; exit 3"]
`)
		out := dockside("logs", "", "-n", ns, "--wait", "--timeout", "3m", "job")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(ContainSubstring("hello from the run\n"))
		Expect(out.stdout).To(ContainSubstring("and from stderr\n"))
		Expect(field(ns, "sandbox/job", "{.status.result.exitCode}")).To(Equal("3"))

		session(ns, "box", busybox)
		out = dockside("logs", "", "-n", ns, "box")
		Expect(out.code).To(Equal(1))
		Expect(out.stderr).To(ContainSubstring("is a session: its primary's output is not kept in the API"))

		deleteAndExpectGone(ns, "job")
		deleteAndExpectGone(ns, "box")
	})
})
