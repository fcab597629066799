//go:build integration

package controllers_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
)

// startRegistry serves an in-memory OCI registry on 127.0.0.1 for the spec and names a repository in it.
func startRegistry() string {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	DeferCleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/dockside/checkpoints"
}

// registryHas tells whether the registry answers 200 to a HEAD of path under the repository's /v2/ root.
func registryHas(repo, path string) func() bool {
	return func() bool {
		host, name, _ := strings.Cut(repo, "/")
		resp, err := http.Head("http://" + host + "/v2/" + name + "/" + path)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

var _ = Describe("Checkpoints in a registry", func() {
	files := map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main"}

	It("restore on another node, also once the node that took them is gone, and their deletion deletes the artifact", func() {
		repo := startRegistry()
		withRegistry := func(o *agent.Options) { o.CheckpointRegistry, o.CheckpointRegistryPlainHTTP = repo, true }
		ns := newNamespace()
		taker, other := newStoringAgent(withRegistry), newStoringAgent(withRegistry)
		ckpt := capturedSession(ns, "snap", taker, files)
		got := getCheckpoint(ckpt)
		manifest, blob := "manifests/ckpt-"+string(got.UID), "blobs/"+got.Status.Digest
		Expect(registryHas(repo, manifest)()).To(BeTrue())
		Expect(registryHas(repo, blob)()).To(BeTrue())

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
		Expect(registryHas(repo, manifest)()).To(BeFalse())
		Expect(registryHas(repo, blob)()).To(BeFalse())
	})
})
