//go:build integration

package controllers_test

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// orderDocker is the fake daemon recording, once record is set, copies into containers and creations of
// primaries in the order the agent made them.
type orderDocker struct {
	*fake.Driver
	record atomic.Bool
	mu     sync.Mutex
	seen   []string
}

func (d *orderDocker) CopyTo(ctx context.Context, name, dir string, tar io.Reader) error {
	if c, err := d.ObserveContainer(ctx, name); err == nil {
		_, role, _ := dd.OwnerFromLabels(c.Labels)
		d.note("copy into " + role)
	}
	return d.Driver.CopyTo(ctx, name, dir, tar)
}

func (d *orderDocker) EnsureContainer(ctx context.Context, spec dd.ContainerSpec) (dd.ContainerInfo, error) {
	if spec.Role == dsv1alpha1.RolePrimary {
		d.note("create primary")
	}
	return d.Driver.EnsureContainer(ctx, spec)
}

func (d *orderDocker) note(what string) {
	if !d.record.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen = append(d.seen, what)
}

func (d *orderDocker) calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

// capturedSession makes a session on a's node with files in its workspace, checkpoints it as ckptName and
// deletes the session, leaving only the Checkpoint.
func capturedSession(ns, ckptName string, a *storingAgent, files map[string]string) *dsv1alpha1.Checkpoint {
	GinkgoHelper()
	src := runningSession(ns, ckptName+"-src", a)
	fillWorkspace(a.docker, src, files)
	ckpt := checkpoint(ns, ckptName, src.Name)
	create(ckpt)
	Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
	Expect(k8s.Delete(ctx(), src)).To(Succeed())
	Eventually(gone(src)).Should(BeTrue())
	return ckpt
}

// restoring is a session on node that restores from the Checkpoint.
func restoring(ns, name, node, from string) *dsv1alpha1.Sandbox {
	sbx := sandbox(ns, name, node)
	sbx.Spec.RestoreFrom = from
	return sbx
}

var _ = Describe("A Sandbox restoring from a Checkpoint", func() {
	files := map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main", "empty/": ""}

	It("gets the Checkpoint's files in its workspace, verified, before its primary starts", func() {
		ns, a := newNamespace(), newStoringAgent()
		capturedSession(ns, "snap", a, files)
		copies := a.docker.Calls(fake.OpCopyTo)

		sbx := restoring(ns, "again", a.node, "snap")
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(condition(sbx, dsv1alpha1.ConditionRestored)()).To(Equal("True/Restored"))
		Expect(message(sbx, dsv1alpha1.ConditionRestored)).To(ContainSubstring(`Checkpoint "snap"`))
		Expect(workspaceFiles(a.docker, sbx)).To(Equal(files))
		Expect(a.docker.Calls(fake.OpCopyTo)).To(Equal(copies + 1))
		Eventually(eventReasons(sbx)).Should(ContainElement("Restored"))

		By("copying them once: a roll later keeps the workspace as it is then")
		fillWorkspace(a.docker, sbx, map[string]string{"notes.txt": "changed after the restore"})
		copies = a.docker.Calls(fake.OpCopyTo)
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "ROLL", Value: "1"}} })
		Eventually(func() int64 { return get(sbx).Status.TopologyGeneration }).Should(BeEquivalentTo(2))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(a.docker.Calls(fake.OpCopyTo)).To(Equal(copies))
		Expect(workspaceFiles(a.docker, sbx)["notes.txt"]).To(Equal("changed after the restore"))
	})

	It("copies them in before the primary is made, and holds the primary back while the copy fails", func() {
		node := newNode()
		docker := &orderDocker{Driver: newDocker(node)}
		a := startStoringAgent(node, docker.Driver, func(o *agent.Options) { o.Driver = docker })
		ns := newNamespace()
		capturedSession(ns, "snap", a, files)
		docker.record.Store(true)
		a.docker.FailNext(fake.OpCopyTo, dd.KindUncertain)
		a.docker.FailNext(fake.OpCopyTo, dd.KindUnavailable)

		sbx := restoring(ns, "again", a.node, "snap")
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(docker.calls()).To(Equal([]string{"copy into holder", "copy into holder", "copy into holder", "create primary"}))
		Expect(workspaceFiles(a.docker, sbx)).To(Equal(files))
	})

	It("waits in Pending, saying which, for a missing Checkpoint and then for an unfinished one", func() {
		ns, a := newNamespace(), newStoringAgent()
		sbx := restoring(ns, "again", a.node, "later")
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/CheckpointNotFound"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(condition(sbx, dsv1alpha1.ConditionRestored)()).To(Equal("False/CheckpointNotFound"))
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(BeEmpty())

		create(checkpoint(ns, "later", "src"))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/CheckpointNotReady"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("False/CheckpointNotReady"))

		runningSession(ns, "src", a)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(condition(sbx, dsv1alpha1.ConditionRestored)()).To(Equal("True/Restored"))
	})

	It("is bound to the node that stores its Checkpoint, and held for good on another node", func() {
		ns := newNamespace()
		first, second := newStoringAgent(), newStoringAgent()
		capturedSession(ns, "snap", second, files)

		unbound := restoring(ns, "anywhere", "", "snap")
		create(unbound)
		Eventually(nodeOf(unbound)).Should(Equal(second.node))
		Eventually(condition(unbound, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(workspaceFiles(second.docker, unbound)).To(Equal(files))

		elsewhere := restoring(ns, "elsewhere", first.node, "snap")
		create(elsewhere)
		Eventually(condition(elsewhere, dsv1alpha1.ConditionStalled)).Should(Equal("True/CheckpointOnOtherNode"))
		Expect(phase(elsewhere)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(message(elsewhere, dsv1alpha1.ConditionReady)).To(ContainSubstring("stored on node " + second.node))
	})

	It("refuses an archive whose bytes changed on disk, and its Checkpoint turns Failed", func() {
		ns, a := newNamespace(), newStoringAgent()
		ckpt := capturedSession(ns, "snap", a, files)
		path := a.archivePath(getCheckpoint(ckpt).Status.Digest)
		data, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		data[600] ^= 0xff // inside the first file's content: same size, different bytes
		Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
		copies := a.docker.Calls(fake.OpCopyTo)

		sbx := restoring(ns, "again", a.node, "snap")
		create(sbx)
		Eventually(ckptState(ckpt)).Should(Equal("Failed/ArchiveCorrupt"))
		Eventually(condition(sbx, dsv1alpha1.ConditionStalled)).Should(Equal("True/CheckpointNotReady"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring("no longer matches its digest"))
		Expect(a.docker.Calls(fake.OpCopyTo)).To(Equal(copies), "nothing was copied in")
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(BeEmpty())
	})
})
