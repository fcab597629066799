package conformance

import (
	"archive/tar"
	"bytes"
	"io"
	"path"
	"testing/fstest"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// workspaceDir is where the behaviours' containers mount the tmpfs volume.
const workspaceDir = "/workspace"

// mounting is a container of owner o in role that mounts volume at workspaceDir.
func mounting(h Harness, o dd.Owner, role, volume string) dd.ContainerSpec {
	s := containerSpec(h, o, role)
	s.Mounts = []dd.VolumeMount{{Volume: volume, Target: workspaceDir}}
	return s
}

// The holder keeps the volume mounted while the primary stops and starts again, as a Sandbox's holder
// keeps its workspace across a restart of the primary.
func tmpfsKeptWhileHeld(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	volume, err := ensureOwn(ctx, h, Volume, o)
	g.Expect(err).NotTo(HaveOccurred())
	started(t, h, mounting(h, o, dsv1alpha1.RoleHolder, volume))
	primary := mounting(h, o, dsv1alpha1.RolePrimary, volume)
	started(t, h, primary)
	writeFile(t, h, primary.Name, "kept.txt", "kept\n")
	g.Expect(h.Driver.StopContainer(ctx, primary.Name, 0)).To(Succeed())
	g.Expect(h.Driver.StartContainer(ctx, primary.Name)).To(Succeed())
	g.Expect(readFile(t, h, primary.Name, "kept.txt")).To(Equal("kept\n"))
}

// With its only running user stopped, the kernel drops the tmpfs mount and its content with it.
func tmpfsLostWhenUnheld(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	volume, err := ensureOwn(ctx, h, Volume, o)
	g.Expect(err).NotTo(HaveOccurred())
	primary := mounting(h, o, dsv1alpha1.RolePrimary, volume)
	started(t, h, primary)
	writeFile(t, h, primary.Name, "lost.txt", "lost\n")
	g.Expect(readFile(t, h, primary.Name, "lost.txt")).To(Equal("lost\n"), "the copy reached the volume")
	g.Expect(h.Driver.StopContainer(ctx, primary.Name, 0)).To(Succeed())
	g.Expect(h.Driver.StartContainer(ctx, primary.Name)).To(Succeed())
	_, err = h.Driver.CopyFrom(ctx, primary.Name, path.Join(workspaceDir, "lost.txt"))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindNotFound), "%v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCopy))
}

// writeFile copies one file into workspaceDir of the container.
func writeFile(t T, h Harness, container, name, content string) {
	t.Helper()
	g := NewWithT(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	g.Expect(tw.AddFS(fstest.MapFS{name: {Data: []byte(content), Mode: 0o644}})).To(Succeed())
	g.Expect(tw.Close()).To(Succeed())
	g.Expect(h.Driver.CopyTo(t.Context(), container, workspaceDir, &buf)).To(Succeed())
}

// readFile copies one file out of workspaceDir of the container and returns its content.
func readFile(t T, h Harness, container, name string) string {
	t.Helper()
	g := NewWithT(t)
	rc, err := h.Driver.CopyFrom(t.Context(), container, path.Join(workspaceDir, name))
	g.Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hdr.Name).To(Equal(name))
	data, err := io.ReadAll(tr)
	g.Expect(err).NotTo(HaveOccurred())
	return string(data)
}
