//go:build integration

package controllers_test

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/internal/testutil/memregistry"
)

// startRegistry serves an in-memory OCI registry on 127.0.0.1 until the spec ends.
func startRegistry() *memregistry.Server {
	GinkgoHelper()
	reg, err := memregistry.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(reg.Close)
	return reg
}

// registryHas tells whether the registry answers 200 to a HEAD of path.
func registryHas(reg *memregistry.Server, path string) bool {
	GinkgoHelper()
	resp, err := http.Head(reg.URL(path))
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

var _ = Describe("Checkpoints in a registry", func() {
	files := map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main"}

	It("restore on another node, also once the node that took them is gone, and their deletion deletes the artifact", func() {
		reg := startRegistry()
		withRegistry := func(o *agent.Options) { o.CheckpointRegistry, o.CheckpointRegistryPlainHTTP = reg.Repo(), true }
		ns := newNamespace()
		taker, other := newStoringAgent(withRegistry), newStoringAgent(withRegistry)
		ckpt := capturedSession(ns, "snap", taker, files)
		got := getCheckpoint(ckpt)
		manifest, blob := "manifests/ckpt-"+string(got.UID), "blobs/"+got.Status.Digest
		Expect(registryHas(reg, manifest)).To(BeTrue())
		Expect(registryHas(reg, blob)).To(BeTrue())

		By("restoring into a Sandbox pinned to the other node, which pulls the archive and keeps no copy")
		moved := restoring(ns, "moved", other.node, "snap")
		create(moved)
		Eventually(condition(moved, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(workspaceFiles(other.docker, moved)).To(Equal(files))
		Expect(other.archives()).To(BeEmpty())

		By("binding and restoring an unbound Sandbox while the taker's agent is gone")
		taker.stop()
		unbound := restoring(ns, "after-loss", "", "snap")
		create(unbound)
		Eventually(nodeOf(unbound)).Should(Equal(other.node))
		Eventually(condition(unbound, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(workspaceFiles(other.docker, unbound)).To(Equal(files))

		By("deleting the Checkpoint once the taker's agent is back, which deletes the artifact")
		startStoringAgent(taker.node, taker.docker, withRegistry)
		Expect(k8s.Delete(ctx(), got)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx(), client.ObjectKeyFromObject(got), &dsv1alpha1.Checkpoint{}))
		}).Should(BeTrue())
		Expect(registryHas(reg, manifest)).To(BeFalse())
		Expect(registryHas(reg, blob)).To(BeFalse())
	})
})
