package conformance

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"path"
	"testing/fstest"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// withWorkspace starts a primary of a new owner that mounts a new 1 MiB tmpfs volume at workspaceDir.
func withWorkspace(t T, h Harness) string {
	t.Helper()
	g, o := NewWithT(t), newOwner(t, h)
	volume, err := ensureOwn(t.Context(), h, Volume, o)
	g.Expect(err).NotTo(HaveOccurred())
	primary := mounting(h, o, dsv1alpha1.RolePrimary, volume)
	started(t, h, primary)
	return primary.Name
}

// copyInAsUser copies files (by path under workspaceDir) into the container as its user.
func copyInAsUser(t T, h Harness, container string, files fstest.MapFS) error {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	NewWithT(t).Expect(tw.AddFS(files)).To(Succeed())
	NewWithT(t).Expect(tw.Close()).To(Succeed())
	return h.Driver.CopyToAsUser(t.Context(), container, workspaceDir, &buf)
}

func in(p string) string { return path.Join(workspaceDir, p) }

func statPath(t T, h Harness) {
	g, ctx := NewWithT(t), t.Context()
	c := withWorkspace(t, h)
	g.Expect(copyInAsUser(t, h, c, fstest.MapFS{"d/f": {Data: []byte("hello"), Mode: 0o600}})).To(Succeed())
	st, err := h.Driver.StatPath(ctx, c, in("d/f"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Name).To(Equal("f"))
	g.Expect(st.Size).To(BeEquivalentTo(5))
	g.Expect(st.Mode).To(Equal(fs.FileMode(0o600)))
	st, err = h.Driver.StatPath(ctx, c, in("d"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.IsDir()).To(BeTrue())
	_, err = h.Driver.StatPath(ctx, c, in("missing"))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindNotFound), "%v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCopy))
}

func renamePath(t T, h Harness) {
	g, ctx := NewWithT(t), t.Context()
	c := withWorkspace(t, h)
	g.Expect(copyInAsUser(t, h, c, fstest.MapFS{"new": {Data: []byte("new\n")}, "old": {Data: []byte("old\n")}, "dir/x": {}})).To(Succeed())
	g.Expect(h.Driver.RenamePath(ctx, c, in("new"), in("old"))).To(Succeed())
	g.Expect(readFile(t, h, c, "old")).To(Equal("new\n"))
	_, err := h.Driver.StatPath(ctx, c, in("new"))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindNotFound), "the source is gone: %v", err)

	err = h.Driver.RenamePath(ctx, c, in("old"), in("dir"))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "never moved into a directory: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseExec))
	g.Expect(readFile(t, h, c, "old")).To(Equal("new\n"), "the source is kept")
	err = h.Driver.RenamePath(ctx, c, in("missing"), in("other"))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "%v", err)
}

func removePath(t T, h Harness) {
	g, ctx := NewWithT(t), t.Context()
	c := withWorkspace(t, h)
	files := fstest.MapFS{
		"dir": {Mode: fs.ModeDir | 0o755}, "dir/sub": {Mode: fs.ModeDir | 0o755}, // MapFS would make them 0555
		"dir/sub/f": {Data: []byte("f")}, "g": {Data: []byte("g")},
	}
	g.Expect(copyInAsUser(t, h, c, files)).To(Succeed())
	err := h.Driver.RemovePath(ctx, c, in("dir"), false)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "a directory needs recursive: %v", err)
	g.Expect(h.Driver.RemovePath(ctx, c, in("g"), false)).To(Succeed(), "the user owns what it copied in")
	g.Expect(h.Driver.RemovePath(ctx, c, in("dir"), true)).To(Succeed())
	for _, p := range []string{"g", "dir", "dir/sub/f"} {
		_, err := h.Driver.StatPath(ctx, c, in(p))
		g.Expect(dd.KindOf(err)).To(Equal(dd.KindNotFound), "%s: %v", p, err)
	}
	g.Expect(h.Driver.RemovePath(ctx, c, in("never-was"), true)).To(Succeed(), "missing is not an error")
}

func pathsPaused(t T, h Harness) {
	g, ctx := NewWithT(t), t.Context()
	c := withWorkspace(t, h)
	g.Expect(copyInAsUser(t, h, c, fstest.MapFS{"f": {Data: []byte("f")}})).To(Succeed())
	g.Expect(h.Driver.PauseContainer(ctx, c)).To(Succeed())
	defer func() { g.Expect(h.Driver.UnpauseContainer(ctx, c)).To(Succeed()) }()
	_, err := h.Driver.StatPath(ctx, c, in("f"))
	g.Expect(err).NotTo(HaveOccurred(), "the archive API works on a paused container")
	g.Expect(copyInAsUser(t, h, c, fstest.MapFS{"g": {Data: []byte("g")}})).To(Succeed())
	err = h.Driver.RenamePath(ctx, c, in("f"), in("h"))
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "%v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseExec))
	err = h.Driver.RemovePath(ctx, c, in("f"), false)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "%v", err)
}

// The volume of withWorkspace holds 1 MiB: a 2 MiB file fills it, and the part written stays.
func copyIntoFullVolume(t T, h Harness) {
	g, ctx := NewWithT(t), t.Context()
	c := withWorkspace(t, h)
	err := copyInAsUser(t, h, c, fstest.MapFS{"big": {Data: make([]byte, 2<<20)}})
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindNoSpace), "%v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCopy))
	st, err := h.Driver.StatPath(ctx, c, in("big"))
	g.Expect(err).NotTo(HaveOccurred(), "what was written so far is left for the caller to remove")
	g.Expect(st.Size).To(BeNumerically(">", 0))
	g.Expect(st.Size).To(BeNumerically("<=", 1<<20))
}
