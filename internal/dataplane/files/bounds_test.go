package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// codeOf is the Status code of a files error, 0 for another error.
func codeOf(err error) int {
	var se *fileswire.StatusError
	if !errors.As(err, &se) {
		return 0
	}
	return int(se.Status.Code)
}

func TestAPathDeeperThanTheBoundIsRefused(t *testing.T) {
	g := NewWithT(t)
	_, err := cleanPath("/workspace" + strings.Repeat("/a", maxDepth-1))
	g.Expect(err).NotTo(HaveOccurred(), "at the bound")
	_, err = cleanPath("/workspace" + strings.Repeat("/a", maxDepth))
	g.Expect(err).To(MatchError("the path is more than 256 directories deep, which files does not go"))
	g.Expect(codeOf(err)).To(Equal(http.StatusBadRequest))

	e := newEnv(t)
	st := status(t, e.get("/workspace"+strings.Repeat("/a", maxDepth)), http.StatusBadRequest)
	g.Expect(st.Message).To(ContainSubstring("more than 256 directories deep"))
	g.Expect(e.docker.Calls(fake.OpStatPath)).To(BeZero(), "refused before a step of the walk")
}

// manyFiles is a tar stream of n empty files.
func manyFiles(t *testing.T, n int) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range n {
		NewWithT(t).Expect(tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("f%05d", i), Mode: 0o644, Typeflag: tar.TypeReg})).To(Succeed())
	}
	NewWithT(t).Expect(tw.Close()).To(Succeed())
	return buf.Bytes()
}

func TestAListPastTheBoundIsRefusedThroughTheArchiveAPI(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	g.Expect(e.docker.CopyTo(context.Background(), e.target.Container, "/workspace", bytes.NewReader(manyFiles(t, maxListEntries)))).To(Succeed())
	g.Expect(e.list("/workspace")).To(HaveLen(maxListEntries), "at the bound")
	g.Expect(e.put("/workspace/one-more", "")).To(HaveHTTPStatus(http.StatusCreated))

	st := status(t, e.do(http.MethodGet, map[string]string{"op": "list", "path": "/workspace"}, nil), http.StatusRequestEntityTooLarge)
	g.Expect(st.Message).To(Equal("/workspace has more than 10000 entries, more than files lists at once: list its subdirectories, or copy it out with op=tar"))
	g.Expect(st.Reason).To(BeEquivalentTo("RequestEntityTooLarge"))
}

func TestAListPastTheBoundIsRefusedOnTheHostSide(t *testing.T) {
	g := NewWithT(t)
	root, m, dir := volumeDir(t) // d, near and out
	for i := range maxListEntries - 3 {
		g.Expect(os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o644)).To(Succeed())
	}
	rec := httptest.NewRecorder()
	g.Expect(listHost(rec, root, m, "/workspace")).To(Succeed(), "at the bound")
	g.Expect(os.WriteFile(filepath.Join(dir, "one-more"), nil, 0o644)).To(Succeed())
	err := listHost(httptest.NewRecorder(), root, m, "/workspace")
	g.Expect(err).To(MatchError(ContainSubstring("/workspace has more than 10000 entries")))
	g.Expect(codeOf(err)).To(Equal(http.StatusRequestEntityTooLarge))
}

func TestARecursiveRemoveOnTheHostSideWalksInBatchesAndStopsAtTheDepthBound(t *testing.T) {
	g := NewWithT(t)
	root, m, dir := volumeDir(t)
	wide := filepath.Join(dir, "d", "wide")
	g.Expect(os.MkdirAll(wide, 0o755)).To(Succeed())
	for i := range 3*dirBatch + 7 {
		g.Expect(os.WriteFile(filepath.Join(wide, fmt.Sprintf("f%04d", i)), nil, 0o644)).To(Succeed())
	}
	g.Expect(removeHost(root, m, "/workspace/d", true)).To(Succeed(), "a directory of many batches, every name removed")
	_, err := os.Lstat(filepath.Join(dir, "d"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())

	// maxDepth directories below the one removed, each holding a file: one level more than the walk goes.
	deep := filepath.Join(dir, "deep")
	at := deep
	for range maxDepth + 1 {
		at = filepath.Join(at, "a")
	}
	g.Expect(os.MkdirAll(at, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(at, "f"), nil, 0o644)).To(Succeed())
	err = removeHost(root, m, "/workspace/deep", true)
	g.Expect(err).To(MatchError(ContainSubstring("holds directories more than 256 deep")))
	g.Expect(codeOf(err)).To(Equal(http.StatusBadRequest))
	_, err = os.Stat(filepath.Join(at, "f"))
	g.Expect(err).NotTo(HaveOccurred(), "nothing below the bound was touched")
}

func TestTarInRefusesNamesTooDeepOrTooLong(t *testing.T) {
	for name, hdr := range map[string]*tar.Header{
		"too deep":       {Name: strings.Repeat("a/", maxDepth) + "f", Typeflag: tar.TypeReg},
		"too long":       {Name: strings.Repeat("n", maxPath+1), Typeflag: tar.TypeReg},
		"a link too far": {Name: "l", Linkname: "/" + strings.Repeat("n", maxPath), Typeflag: tar.TypeSymlink},
	} {
		t.Run(name, func(t *testing.T) {
			g, e := NewWithT(t), newEnv(t)
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			hdr.Mode = 0o644
			g.Expect(tw.WriteHeader(hdr)).To(Succeed())
			g.Expect(tw.Close()).To(Succeed())
			st := status(t, e.do(http.MethodPut, map[string]string{"op": "tar", "path": "/workspace"}, &buf), http.StatusBadRequest)
			g.Expect(st.Message).To(Or(ContainSubstring("more than 256 directories deep"), ContainSubstring("longer than 4096 bytes")))
			g.Expect(e.list("/workspace")).To(BeEmpty())
			g.Expect(e.docker.Calls(fake.OpCopyToAsUser)).To(BeZero(), "refused while spooled, before the container")
		})
	}
	g := NewWithT(t)
	g.Expect(insideName(strings.Repeat("a/", maxDepth-1)+"f")).To(Succeed(), "at the bound")
}

func TestTarInBoundsTheDirectoryNamesItKeeps(t *testing.T) {
	g := NewWithT(t)
	dirs := &seenDirs{kinds: map[string]bool{}}
	long := strings.Repeat("d", maxPath-8)
	var err error
	for i := 0; err == nil && i < maxTarDirNames/len(long)+2; i++ {
		err = dirs.note(fmt.Sprintf("%s%08d", long, i), true)
	}
	g.Expect(err).To(MatchError(ContainSubstring("the archive names more than 16MiB of paths")))
	g.Expect(dirs.bytes).To(BeNumerically("<=", maxTarDirNames+maxPath), "stopped at the bound")
	g.Expect(dirs.note(fmt.Sprintf("%s%08d", long, 0), false)).To(Succeed(), "a name it has costs nothing more")
}

func TestASparseFileLargerThanItsMountIsNotSpooled(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	// Holes take no room in the 1 MiB workspace; a copy out would send all 8 MiB.
	g.Expect(e.docker.WriteSparse(e.target.Container, "/workspace/hole", 8<<20)).To(Succeed())
	spoolDir := t.TempDir()
	e.h.SpoolDir = spoolDir

	st := status(t, e.get("/workspace/hole"), http.StatusRequestEntityTooLarge)
	g.Expect(st.Message).To(Equal("/workspace/hole is 8MiB, more than the workspace (1MiB) holds (it is sparse, or grew past it): files does not copy it out through the node's disk; read its parts in the Sandbox"))
	g.Expect(e.docker.Calls(fake.OpCopyFrom)).To(BeZero(), "refused before the daemon sends a byte")

	st = status(t, e.do(http.MethodGet, map[string]string{"op": "tar", "path": "/workspace"}, nil), http.StatusRequestEntityTooLarge)
	g.Expect(st.Message).To(HavePrefix("the files of /workspace are more than the workspace (1MiB) holds (one is sparse, or they grew)"))
	st = status(t, e.do(http.MethodGet, map[string]string{"op": "list", "path": "/workspace"}, nil), http.StatusRequestEntityTooLarge)
	g.Expect(st.Message).To(HavePrefix("the files of /workspace are more than the workspace (1MiB) holds"))
	left, err := os.ReadDir(spoolDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(left).To(BeEmpty())

	g.Expect(e.put("/workspace/small", "fits")).To(HaveHTTPStatus(http.StatusCreated))
	g.Expect(e.get("/workspace/small").Body.String()).To(Equal("fits"), "a file that fits is read as before")
}

// endlessZeros counts what was read of it.
type endlessZeros struct{ read int64 }

func (z *endlessZeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

func TestTheSpoolStopsAtItsLimit(t *testing.T) {
	g := NewWithT(t)
	z := &endlessZeros{}
	_, err := spool(t.TempDir(), z, 1<<20)
	g.Expect(err).To(MatchError(errTooLarge))
	g.Expect(z.read).To(BeNumerically("<=", 1<<20+64<<10), "the node's disk took no more than the limit and a read's buffer")

}

func TestADirectoryArchiveIsBoundedByItsFilesNotItsHeaders(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := range 100 { // 100 headers, 50 KiB of them, and 100 bytes of files
		g.Expect(tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("f%d", i), Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})).To(Succeed())
		_, err := tw.Write([]byte("x"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(tw.Close()).To(Succeed())
	got, err := io.ReadAll(sizedTar(bytes.NewReader(buf.Bytes()), 100))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(buf.Bytes()), "passed on as it is, padding included")

	z := &endlessZeros{}
	huge := &tar.Header{Name: "hole", Mode: 0o644, Size: 1 << 40, Typeflag: tar.TypeReg}
	var head bytes.Buffer
	g.Expect(tar.NewWriter(&head).WriteHeader(huge)).To(Succeed())
	_, err = io.ReadAll(sizedTar(io.MultiReader(&head, z), 1<<20))
	g.Expect(err).To(MatchError(errTooLarge))
	g.Expect(z.read).To(BeZero(), "stopped at the header, before a byte of the file")
}
