package dockerdriver

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

// runVolumeDir is a directory standing for a run volume's host side, with run key's folder, opened as its
// root.
func runVolumeDir(t *testing.T, key string) (*os.File, string) {
	g := NewWithT(t)
	dir := t.TempDir()
	run := filepath.Join(dir, "runs", key)
	g.Expect(os.MkdirAll(run, 0o700)).To(Succeed())
	root, err := os.Open(dir)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { root.Close() })
	return root, run
}

func TestReadRunInKeepsTheCapAndCountsTheRest(t *testing.T) {
	g := NewWithT(t)
	root, run := runVolumeDir(t, "k")
	g.Expect(os.WriteFile(filepath.Join(run, "stdout"), []byte("0123456789"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(run, "stderr"), []byte("oops"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(run, "cut"), []byte("5 1\n"), 0o600)).To(Succeed())
	res, ok := readRunIn(root, "k", 4)
	g.Expect(ok).To(BeTrue())
	g.Expect(string(res.Stdout)).To(Equal("0123"))
	g.Expect(res.StdoutCut).To(Equal(int64(6+5)), "the bytes past the cap in the file and those the supervisor dropped")
	g.Expect(string(res.Stderr)).To(Equal("oops"))
	g.Expect(res.StderrCut).To(Equal(int64(1)))
	g.Expect(res.CutUnread).To(BeFalse(), "every file is read, whatever the sizes")
}

func TestReadRunInFollowsNothingTheCommandPlanted(t *testing.T) {
	g := NewWithT(t)
	root, run := runVolumeDir(t, "k")
	secret := filepath.Join(t.TempDir(), "secret")
	g.Expect(os.WriteFile(secret, []byte("host's"), 0o600)).To(Succeed())
	g.Expect(os.Symlink(secret, filepath.Join(run, "stdout"))).To(Succeed())
	g.Expect(syscall.Mkfifo(filepath.Join(run, "stderr"), 0o600)).To(Succeed())
	res, ok := readRunIn(root, "k", 64)
	g.Expect(ok).To(BeTrue())
	g.Expect(res.Stdout).To(BeEmpty(), "a link is not followed")
	g.Expect(res.Stderr).To(BeEmpty(), "a FIFO is not read, and its open does not block")

	g.Expect(os.Symlink(filepath.Dir(secret), filepath.Join(filepath.Dir(run), "linked"))).To(Succeed())
	_, ok = readRunIn(root, "linked", 64)
	g.Expect(ok).To(BeFalse(), "a run's folder that is a link is left to the archive API")
	_, ok = readRunIn(root, "missing", 64)
	g.Expect(ok).To(BeFalse())
}
