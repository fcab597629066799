//go:build integration

package controllers_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// smallBound is the most a capture of a 1Mi workspace may write: the size, an eighth more, and 1 MiB.
const smallBound = 1<<20 + 1<<17 + 1<<20

// gatedDocker is the fake daemon holding the next copy out of a container, once armed, until released.
type gatedDocker struct {
	*fake.Driver
	armed   atomic.Bool
	reached chan struct{} // closed when the held copy has begun
	release chan struct{} // closed by the spec to let it go on
}

func newGatedDocker(node string) *gatedDocker {
	return &gatedDocker{Driver: newDocker(node), reached: make(chan struct{}), release: make(chan struct{})}
}

func (d *gatedDocker) CopyFrom(ctx context.Context, name, path string) (io.ReadCloser, error) {
	if d.armed.CompareAndSwap(true, false) {
		close(d.reached)
		select {
		case <-d.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return d.Driver.CopyFrom(ctx, name, path)
}

// smallSession creates a session with a 1Mi workspace on the agent's node and waits until it is Ready.
func smallSession(ns, name string, a *storingAgent) *dsv1alpha1.Sandbox {
	GinkgoHelper()
	sbx := sandbox(ns, name, a.node)
	sbx.Spec.Workspace.Size = resource.MustParse("1Mi")
	create(sbx)
	Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	return sbx
}

// expectStoreEmpty checks that the agent's store holds no archive and no unfinished capture.
func expectStoreEmpty(a *storingAgent) {
	GinkgoHelper()
	Expect(a.archives()).To(BeEmpty())
	tmp, err := os.ReadDir(filepath.Join(a.store, "tmp"))
	Expect(err).NotTo(HaveOccurred())
	Expect(tmp).To(BeEmpty(), "no unfinished capture is left")
}

var _ = Describe("A Checkpoint's size", func() {
	It("is bounded by the workspace's size plus archive overhead: past it the capture fails, thawed, storing nothing", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := smallSession(ns, "box", a)
		// Like a sparse file on Docker: the fake holds more than the 1Mi tmpfs would, and sends it in full.
		Expect(a.docker.WriteSparse(holderOf(a.docker, sbx), "/workspace/sparse", 3<<20)).To(Succeed())
		pauses, thaws := a.docker.Calls(fake.OpPauseContainer), a.docker.Calls(fake.OpUnpauseContainer)

		ckpt := checkpoint(ns, "snap", "box")
		create(ckpt)
		Eventually(ckptState(ckpt)).Should(Equal("Failed/CaptureTooLarge"))
		Expect(ckptMessage(ckpt)).To(And(
			ContainSubstring(`Sandbox "box" passed 2228224 bytes, the workspace's size (1Mi) plus archive overhead`),
			ContainSubstring("sparse or oversized files"),
		))
		Eventually(objectEvents(ckpt, "Checkpoint")).Should(ContainElement("CaptureFailed"))
		expectStoreEmpty(a)

		By("having thawed the primary")
		Expect(a.docker.Calls(fake.OpPauseContainer)).To(Equal(pauses + 1))
		Expect(a.docker.Calls(fake.OpUnpauseContainer)).To(Equal(thaws + 1))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))

		By("capturing the listed paths under the same bound")
		some := checkpoint(ns, "some", "box", "sparse")
		create(some)
		Eventually(ckptState(some)).Should(Equal("Failed/CaptureTooLarge"))
		expectStoreEmpty(a)
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
	})

	It("is bounded by the node's store: a capture that could pass its limit waits for captures under way, or fails", func() {
		node := newNode()
		docker := newGatedDocker(node)
		limit := int64(smallBound + smallBound/2) // one small capture at a time; never a 512Mi workspace
		a := startStoringAgent(node, docker.Driver, func(o *agent.Options) { o.Driver, o.CheckpointStoreBytes = docker, limit })
		ns := newNamespace()

		By("failing at once, without freezing it, a capture of a workspace larger than the store")
		big := runningSession(ns, "big", a)
		pauses := a.docker.Calls(fake.OpPauseContainer)
		tooBig := checkpoint(ns, "too-big", "big")
		create(tooBig)
		Eventually(ckptState(tooBig)).Should(Equal("Failed/StoreFull"))
		Expect(ckptMessage(tooBig)).To(And(
			ContainSubstring("the checkpoint store of node "+a.node+" is full"),
			ContainSubstring("--checkpoint-store-bytes"),
		))
		Expect(a.docker.Calls(fake.OpPauseContainer)).To(Equal(pauses), "checked before the freeze")
		Expect(container(a.docker, big, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
		expectStoreEmpty(a)

		By("holding a second capture while the first holds the room")
		smallSession(ns, "one", a)
		other := smallSession(ns, "other", a)
		fillWorkspace(a.docker, other, map[string]string{"notes.txt": "not the same archive as the first"})
		docker.armed.Store(true)
		first := checkpoint(ns, "first", "one")
		create(first)
		Eventually(docker.reached).Should(BeClosed())
		second := checkpoint(ns, "second", "other")
		create(second)
		Eventually(ckptState(second)).Should(Equal("Capturing/WaitingForStore"))
		Expect(ckptMessage(second)).To(ContainSubstring("waiting for captures under way on node " + a.node))
		Expect(container(a.docker, other, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning), "not frozen while it waits")

		close(docker.release)
		Eventually(ckptState(first)).Should(Equal("Ready/Succeeded"))
		Eventually(ckptState(second)).Should(Equal("Ready/Succeeded"))
		Expect(a.archives()).To(HaveLen(2))
	})
})
