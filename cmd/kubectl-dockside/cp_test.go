package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/dataplane/files"
)

const filesPath = "/apis/subresources.dockside.dev/v1alpha1/namespaces/ns/sandboxes/box/files"

// filesServer serves the files subresource of Sandbox ns/box as the agent would, on the fake driver: a
// running primary with a 1 MiB workspace at /workspace.
func filesServer(t *testing.T) *filesClient {
	g, ctx := NewWithT(t), context.Background()
	d := fake.New("node-a")
	d.AddImage("busybox", dd.ImageInfo{})
	o := dd.Owner{Namespace: "ns", Name: "box", UID: "u", Generation: 1}
	vol := dd.Name(o, dsv1alpha1.RoleWorkspace, "")
	_, err := d.EnsureVolume(ctx, dd.VolumeSpec{Name: vol, Owner: o, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	s := dd.ContainerSpec{
		Name: dd.Name(o, dsv1alpha1.RolePrimary, ""), Owner: o, Role: dsv1alpha1.RolePrimary, Image: "busybox",
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64},
		Mounts:    []dd.VolumeMount{{Volume: vol, Target: "/workspace"}},
	}
	_, err = d.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.StartContainer(ctx, s.Name)).To(Succeed())
	h := &files.Handler{Driver: d, SpoolDir: t.TempDir()}
	target := files.Target{Container: s.Name, Mounts: []files.Mount{{Path: "/workspace", SizeBytes: 1 << 20, Name: "the workspace"}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != filesPath {
			http.NotFound(w, r)
			return
		}
		h.Serve(w, r, target)
	}))
	t.Cleanup(srv.Close)
	c, err := newFilesClient(&rest.Config{Host: srv.URL}, "ns", "box")
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

func TestCopyAFileInAndOut(t *testing.T) {
	g, ctx, c := NewWithT(t), context.Background(), filesServer(t)
	dir := t.TempDir()
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)
	local := filepath.Join(dir, "in.bin")
	g.Expect(os.WriteFile(local, data, 0o640)).To(Succeed())

	g.Expect(copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/workspace/", local: local})).To(Succeed())
	info, err := c.stat(ctx, "/workspace/in.bin")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode).To(Equal("0640"), "the local file's permission bits")

	g.Expect(copyOut(ctx, c, copyRequest{sandbox: "box", remote: "/workspace/in.bin", local: dir + "/back.bin"})).To(Succeed())
	g.Expect(os.ReadFile(filepath.Join(dir, "back.bin"))).To(Equal(data))
	st, err := os.Stat(filepath.Join(dir, "back.bin"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode().Perm()).To(BeEquivalentTo(0o640))

	g.Expect(os.WriteFile(local, []byte("old"), 0o600)).To(Succeed())
	g.Expect(copyOut(ctx, c, copyRequest{sandbox: "box", remote: "/workspace/in.bin", local: dir})).To(Succeed())
	g.Expect(os.ReadFile(local)).To(Equal(data), "an existing directory gets the file under its own name")
}

func TestCopyADirectoryInAndOut(t *testing.T) {
	g, ctx, c := NewWithT(t), context.Background(), filesServer(t)
	src := filepath.Join(t.TempDir(), "src")
	for name, content := range map[string]string{"main.go": "package main\n", "pkg/lib.go": "package pkg\n", "pkg/deep/x": "x"} {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(src, name), []byte(content), 0o644)).To(Succeed())
	}
	g.Expect(copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/workspace", local: src})).To(Succeed())
	var out bytes.Buffer
	g.Expect(list(ctx, c, "/workspace/src", &out)).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`(?m)^-rw-r--r-- +13 .* main.go$`))
	g.Expect(out.String()).To(MatchRegexp(`(?m)^drwxr-xr-x +0 .* pkg$`))

	back := t.TempDir()
	g.Expect(copyOut(ctx, c, copyRequest{sandbox: "box", remote: "/workspace/src", local: back})).To(Succeed())
	for name, content := range map[string]string{"main.go": "package main\n", "pkg/lib.go": "package pkg\n", "pkg/deep/x": "x"} {
		g.Expect(os.ReadFile(filepath.Join(back, "src", name))).To(BeEquivalentTo(content), name)
	}
}

func TestCopyPastTheMountExitsWith3AndLeavesNothing(t *testing.T) {
	g, ctx, c := NewWithT(t), context.Background(), filesServer(t)
	big := filepath.Join(t.TempDir(), "big.bin")
	g.Expect(os.WriteFile(big, make([]byte, 1<<20+1), 0o600)).To(Succeed())
	err := copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/workspace/big.bin", local: big})
	g.Expect(exitCode("cp", err)).To(Equal(exitTooLarge))
	g.Expect(err).To(MatchError("box:/workspace/big.bin: /workspace/big.bin (1048577B) is larger than the workspace: 1MiB"))
	items, err := c.list(ctx, "/workspace")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(BeEmpty())
}

func TestCopyRefusalsCarryTheServersMessage(t *testing.T) {
	g, ctx, c := NewWithT(t), context.Background(), filesServer(t)
	local := filepath.Join(t.TempDir(), "f")
	g.Expect(os.WriteFile(local, []byte("x"), 0o600)).To(Succeed())
	err := copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/etc/f", local: local})
	g.Expect(exitCode("cp", err)).To(Equal(exitFailed))
	g.Expect(err).To(MatchError("box:/etc/f: /etc/f is on the read-only root file system; write under /workspace"))
	err = copyOut(ctx, c, copyRequest{sandbox: "box", remote: "/workspace/absent", local: local})
	g.Expect(err).To(MatchError("box:/workspace/absent: /workspace/absent does not exist"))
	g.Expect(os.ReadFile(local)).To(BeEquivalentTo("x"), "nothing written locally")
	var nf *notFoundError
	g.Expect(errors.As(err, &nf)).To(BeTrue())
}

func TestExtractTarStaysInside(t *testing.T) {
	g := NewWithT(t)
	outside := t.TempDir()
	dir := filepath.Join(t.TempDir(), "x")
	err := extractTar(bytes.NewReader(tarBytes(t, "l", outside, "l/evil")), dir)
	g.Expect(err).To(HaveOccurred(), "an entry under a link the archive made stays inside")
	_, err = os.Stat(filepath.Join(outside, "evil"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())
}

// tarBytes is an archive of a symlink name to target, then a file under it.
func tarBytes(t *testing.T, link, target, file string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	g := NewWithT(t)
	g.Expect(tw.WriteHeader(&tar.Header{Name: link, Linkname: target, Typeflag: tar.TypeSymlink})).To(Succeed())
	g.Expect(tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})).To(Succeed())
	_, _ = tw.Write([]byte("x"))
	g.Expect(tw.Close()).To(Succeed())
	return buf.Bytes()
}

// brokenReader sends n bytes, then fails.
type brokenReader struct{ n int }

func (b *brokenReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errors.New("the disk went away")
	}
	n := min(len(p), b.n)
	b.n -= n
	return n, nil
}

func TestCopyInThatBreaksOffLeavesNothing(t *testing.T) {
	g, ctx, c := NewWithT(t), context.Background(), filesServer(t)
	err := c.put(ctx, "/workspace/half", &brokenReader{n: 300 << 10}, 600<<10, "", false)
	g.Expect(err).To(MatchError(ContainSubstring("the disk went away")))
	items, err := c.list(ctx, "/workspace")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(BeEmpty())
}
