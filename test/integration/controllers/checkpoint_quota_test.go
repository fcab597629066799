//go:build integration

package controllers_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("A namespace's Checkpoint bytes on a node", func() {
	It("are capped by --checkpoint-bytes-per-namespace: past it a capture fails storing nothing, a namespace at its cap is refused before the freeze, other namespaces keep their room, and deleting a Checkpoint makes room", func() {
		const perNamespace = 64 << 10
		a := newStoringAgent(func(o *agent.Options) { o.CheckpointBytesPerNamespace = perNamespace })
		ns, otherNs := newNamespace(), newNamespace()

		By("storing a first Checkpoint that fits")
		one := smallSession(ns, "one", a)
		fillWorkspace(a.docker, one, map[string]string{"notes.txt": strings.Repeat("1", 20<<10)})
		first := checkpoint(ns, "first", "one")
		create(first)
		Eventually(ckptState(first)).Should(Equal("Ready/Succeeded"))
		used := getCheckpoint(first).Status.SizeBytes
		Expect(used).To(BeNumerically("<", perNamespace))

		By("failing a capture that would take the namespace past its cap, thawed, storing nothing")
		big := smallSession(ns, "big", a)
		fillWorkspace(a.docker, big, map[string]string{"data.bin": strings.Repeat("2", 50<<10)})
		pauses, thaws := a.docker.Calls(fake.OpPauseContainer), a.docker.Calls(fake.OpUnpauseContainer)
		tooMuch := checkpoint(ns, "too-much", "big")
		create(tooMuch)
		Eventually(ckptState(tooMuch)).Should(Equal("Failed/NamespaceCheckpointQuotaExceeded"))
		Expect(ckptMessage(tooMuch)).To(Equal(fmt.Sprintf(
			`the workspace archive of Sandbox "big" passed %d bytes, the room namespace %s has left on node %s: its Checkpoints there hold %d bytes of the %d bytes the agent allows a namespace (--checkpoint-bytes-per-namespace); nothing was stored; delete Checkpoints of this namespace stored on node %s to make room`,
			perNamespace-used, ns, a.node, used, perNamespace, a.node)))
		Eventually(objectEvents(tooMuch, "Checkpoint")).Should(ContainElement("CaptureFailed"))
		Expect(a.archives()).To(HaveLen(1), "only the first Checkpoint's archive")
		Expect(a.archives()).To(ConsistOf(strings.TrimPrefix(getCheckpoint(first).Status.Digest, "sha256:")))
		expectNoUnfinishedCapture(a)
		Expect(a.docker.Calls(fake.OpPauseContainer)).To(Equal(pauses + 1))
		Expect(a.docker.Calls(fake.OpUnpauseContainer)).To(Equal(thaws + 1))
		Expect(container(a.docker, big, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))

		By("leaving another namespace on the same node its own room")
		elsewhere := smallSession(otherNs, "elsewhere", a)
		fillWorkspace(a.docker, elsewhere, map[string]string{"data.bin": strings.Repeat("3", 50<<10)})
		theirs := checkpoint(otherNs, "theirs", "elsewhere")
		create(theirs)
		Eventually(ckptState(theirs)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(theirs).Status.SizeBytes).To(BeNumerically(">", perNamespace-used), "more than the first namespace had left")

		By("refusing before the freeze a capture in a namespace whose archives fill its cap")
		overhead := used - 20<<10 // the fake's tar of one file: its folder's and the file's headers, the end marker
		room := perNamespace - getCheckpoint(theirs).Status.SizeBytes
		rest := smallSession(otherNs, "rest", a)
		fillWorkspace(a.docker, rest, map[string]string{"rest.bin": strings.Repeat("4", int(room-overhead))})
		fills := checkpoint(otherNs, "fills", "rest")
		create(fills)
		Eventually(ckptState(fills)).Should(Equal("Ready/Succeeded"))
		Expect(getCheckpoint(fills).Status.SizeBytes).To(Equal(room), "exactly the room that was left")
		pauses = a.docker.Calls(fake.OpPauseContainer)
		atCap := checkpoint(otherNs, "at-cap", "rest")
		create(atCap)
		Eventually(ckptState(atCap)).Should(Equal("Failed/NamespaceCheckpointQuotaExceeded"))
		Expect(ckptMessage(atCap)).To(Equal(fmt.Sprintf(
			`the Checkpoints of namespace %s stored on node %s hold %d bytes of the %d bytes the agent allows a namespace there (--checkpoint-bytes-per-namespace); nothing was captured; delete Checkpoints of this namespace stored on node %s to make room`,
			otherNs, a.node, perNamespace, perNamespace, a.node)))
		Expect(a.docker.Calls(fake.OpPauseContainer)).To(Equal(pauses), "refused before the freeze")
		expectNoUnfinishedCapture(a)

		By("making room when a Checkpoint of the namespace is deleted")
		Expect(k8s.Delete(ctx(), first)).To(Succeed())
		Eventually(objectGone(first)).Should(BeTrue())
		again := checkpoint(ns, "again", "big")
		create(again)
		Eventually(ckptState(again)).Should(Equal("Ready/Succeeded"))
		Expect(a.archives()).To(HaveLen(3), "the second namespace's two and the new one")
	})
})

// expectNoUnfinishedCapture checks that the agent's store holds no temporary file of a capture.
func expectNoUnfinishedCapture(a *storingAgent) {
	GinkgoHelper()
	tmp, err := os.ReadDir(filepath.Join(a.store, "tmp"))
	Expect(err).NotTo(HaveOccurred())
	Expect(tmp).To(BeEmpty(), "no unfinished capture is left")
}
