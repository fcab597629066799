package files

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/sys/unix"

	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// volumeDir is a directory standing for a volume's host side, opened as its root, with a link out of it.
func volumeDir(t *testing.T) (*os.File, *Mount, string) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(dir, "d"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "d", "f"), []byte("in"), 0o644)).To(Succeed())
	g.Expect(os.Symlink("/etc", filepath.Join(dir, "out"))).To(Succeed())
	g.Expect(os.Symlink("d", filepath.Join(dir, "near"))).To(Succeed())
	root, err := os.Open(dir)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { root.Close() })
	return root, &Mount{Path: "/workspace", SizeBytes: 1 << 20, Name: "the workspace"}, dir
}

func TestOpenInFollowsNoLink(t *testing.T) {
	g := NewWithT(t)
	root, m, _ := volumeDir(t)
	f, err := openIn(root, m, "/workspace/d/f", os.O_RDONLY, 0)
	g.Expect(err).NotTo(HaveOccurred())
	f.Close()
	for _, p := range []string{"/workspace/out/passwd", "/workspace/near/f", "/workspace/out", "/workspace/near"} {
		_, err := openIn(root, m, p, os.O_RDONLY, 0)
		g.Expect(hostError(err, p, m)).To(MatchError(ContainSubstring("a link or a mount appeared in its path")), p)
	}
	_, err = openIn(root, m, "/workspace/../../etc/passwd", os.O_RDONLY, 0)
	g.Expect(hostError(err, "/etc/passwd", m)).To(MatchError("/etc/passwd does not exist"), "'..' stays in the volume's root")
}

func TestWriteHostIsAtomic(t *testing.T) {
	g := NewWithT(t)
	root, m, dir := volumeDir(t)
	uid, gid := os.Getuid(), os.Getgid()
	putIn := func(dir, name string, data []byte, size int64) error {
		r := httptest.NewRequest(http.MethodPut, "/files", bytes.NewReader(data))
		r.ContentLength = size
		_, err := writeHost(r, root, m, dir, name, 0o640, uid, gid)
		return err
	}
	put := func(data []byte, size int64) error { return putIn("/workspace/d", "f", data, size) }
	g.Expect(put([]byte("new"), 3)).To(Succeed())
	got, err := os.ReadFile(filepath.Join(dir, "d", "f"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal("new"))
	st, err := os.Stat(filepath.Join(dir, "d", "f"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o640)))

	g.Expect(put([]byte("cut"), 10)).To(MatchError("the upload broke off after 3 bytes; nothing was written"))
	r := httptest.NewRequest(http.MethodPut, "/files", iotest.ErrReader(os.ErrClosed))
	_, err = writeHost(r, root, m, "/workspace/d", "f", 0o644, uid, gid)
	g.Expect(err).To(HaveOccurred())
	entries, err := os.ReadDir(filepath.Join(dir, "d"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "no temporary file is left")
	got, _ = os.ReadFile(filepath.Join(dir, "d", "f"))
	g.Expect(string(got)).To(Equal("new"), "the file is as it was")

	var se *fileswire.StatusError
	g.Expect(errors.As(putIn("/workspace/out", "x", []byte("x"), 1), &se)).To(BeTrue())
	g.Expect(se.Status.Code).To(BeEquivalentTo(http.StatusConflict), "a link is never a directory to write in: %s", se)
	_, err = os.Lstat("/etc/x")
	g.Expect(os.IsNotExist(err)).To(BeTrue())
	g.Expect(putIn("/workspace", "d", []byte("x"), 1)).To(MatchError("/workspace/d is a directory"))
}

func TestListHostFollowsNothing(t *testing.T) {
	g := NewWithT(t)
	root, m, _ := volumeDir(t)
	rec := httptest.NewRecorder()
	g.Expect(listHost(rec, root, m, "/workspace")).To(Succeed())
	var items []FileInfo
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &items)).To(Succeed())
	g.Expect(items).To(HaveLen(3))
	g.Expect([]string{items[0].Name, items[0].Type, items[1].Name, items[1].Link, items[2].Name, items[2].Link}).
		To(Equal([]string{"d", "dir", "near", "d", "out", "/etc"}))
	var se *fileswire.StatusError
	g.Expect(errors.As(listHost(httptest.NewRecorder(), root, m, "/workspace/out"), &se)).To(BeTrue())
	g.Expect(se.Status.Code).To(BeEquivalentTo(http.StatusConflict), "a link is never a directory to list: %s", se)
	rec = httptest.NewRecorder()
	g.Expect(listHost(rec, root, m, "/workspace/d")).To(Succeed())
	g.Expect(rec.Body.String()).To(ContainSubstring(`"name":"f","size":2,"mode":"0644"`))
}

func TestMkdirAndRemoveHostFollowNoLink(t *testing.T) {
	g := NewWithT(t)
	root, m, dir := volumeDir(t)
	uid, gid := os.Getuid(), os.Getgid()
	g.Expect(mkdirHost(root, m, "/workspace/d", []string{"a", "b"}, uid, gid)).To(Succeed())
	st, err := os.Stat(filepath.Join(dir, "d", "a", "b"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Mode()).To(Equal(os.ModeDir | 0o755))
	g.Expect(mkdirHost(root, m, "/workspace/out", []string{"x"}, uid, gid)).To(HaveOccurred(), "never made through a link")
	_, err = os.Lstat("/etc/x")
	g.Expect(os.IsNotExist(err)).To(BeTrue())

	g.Expect(removeHost(root, m, "/workspace/out", false)).To(Succeed(), "a link is removed itself")
	g.Expect(os.Stat("/etc")).NotTo(BeNil())
	g.Expect(removeHost(root, m, "/workspace/d", false)).To(MatchError("/workspace/d is a directory"))
	g.Expect(removeHost(root, m, "/workspace/d", true)).To(Succeed())
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(1), "only the link near is left")
	g.Expect(removeHost(root, m, "/workspace/near/f", false)).To(HaveOccurred(), "never removed through a link")
}

// TestReadHostRefusesAPipeAtOnce: a named pipe with no writer would block the open for ever, with the thread
// that made it; it is refused with what it is, as a socket is.
func TestReadHostRefusesAPipeAtOnce(t *testing.T) {
	g := NewWithT(t)
	root, m, dir := volumeDir(t)
	g.Expect(unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644)).To(Succeed())
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	done := make(chan error, 1)
	go func() { done <- readHost(httptest.NewRecorder(), root, m, "/workspace/fifo") }()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(MatchError("/workspace/fifo is a named pipe (FIFO): files reads only regular files and directories")))
	g.Expect(readHost(httptest.NewRecorder(), root, m, "/workspace/sock")).To(HaveOccurred())
	rec := httptest.NewRecorder()
	g.Expect(readHost(rec, root, m, "/workspace/d/f")).To(Succeed())
	g.Expect(rec.Body.String()).To(Equal("in"))
}
