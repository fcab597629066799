package archive

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// tarOf is a tar stream holding one file per name, with the name as content.
func tarOf(names ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		_ = tw.WriteHeader(&tar.Header{Name: n, Mode: 0o600, Size: int64(len(n)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(n))
	}
	_ = tw.Close()
	return buf.Bytes()
}

// commit stores data as ref's archive.
func commit(g *WithT, s *Store, ref string, data []byte) (Archive, error) {
	f, err := s.Create()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.Write(data)
	g.Expect(err).NotTo(HaveOccurred())
	return s.Commit(f, ref)
}

func entries(g *WithT, dir string) []string {
	list, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

func TestCommitStoresByDigestAndReadsBack(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	data := tarOf("a", "dir/b")
	a, err := commit(g, s, "uid-1", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Digest).To(MatchRegexp(`^sha256:[a-f0-9]{64}$`))
	g.Expect(a.Size).To(BeEquivalentTo(len(data)))
	g.Expect(s.Check(a)).To(Succeed())
	g.Expect(entries(g, filepath.Join(s.dir, "tmp"))).To(BeEmpty(), "the temporary file is gone")

	f, err := s.Open(a)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	back, err := io.ReadAll(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back).To(Equal(data))
}

func TestCommitRefusesWhatIsNotACompleteTarStream(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	data := tarOf("file-with-some-content")
	for name, bad := range map[string][]byte{
		"cut short":           data[:600],
		"cut between entries": tarOf("first", "second")[:1024],
		"not a tar":           bytes.Repeat([]byte("x"), 1024),
		"bad header":          append([]byte("garbage!"), data[8:]...),
	} {
		_, err := commit(g, s, "uid-1", bad)
		g.Expect(err).To(HaveOccurred(), name)
	}
	g.Expect(entries(g, filepath.Join(s.dir, "sha256"))).To(BeEmpty())
	g.Expect(entries(g, filepath.Join(s.dir, "tmp"))).To(BeEmpty())
}

func TestSharedArchiveIsRemovedWithItsLastReference(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	data := tarOf("same")
	a1, err := commit(g, s, "uid-1", data)
	g.Expect(err).NotTo(HaveOccurred())
	a2, err := commit(g, s, "uid-2", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a2).To(Equal(a1))
	g.Expect(entries(g, filepath.Join(s.dir, "sha256"))).To(HaveLen(1), "stored once")

	g.Expect(s.Release("uid-1")).To(Succeed())
	g.Expect(s.Check(a1)).To(Succeed(), "uid-2 still holds it")
	g.Expect(s.Release("uid-1")).To(Succeed(), "releasing twice is not an error")
	g.Expect(s.Release("uid-2")).To(Succeed())
	g.Expect(s.Check(a1)).To(MatchError(ErrMissing))
	g.Expect(entries(g, filepath.Join(s.dir, "refs"))).To(BeEmpty())
}

func TestRecommitMovesTheReference(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	old, err := commit(g, s, "uid-1", tarOf("old"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = commit(g, s, "uid-1", tarOf("new"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Check(old)).To(MatchError(ErrMissing), "a capture taken again drops the one before")
	g.Expect(entries(g, filepath.Join(s.dir, "sha256"))).To(HaveLen(1))
}

func TestMissingAndCorruptArchivesAreReported(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	a, err := commit(g, s, "uid-1", tarOf("precious"))
	g.Expect(err).NotTo(HaveOccurred())
	blob := s.blob(a.Digest)

	g.Expect(s.Check(Archive{Digest: a.Digest, Size: a.Size + 1})).To(MatchError(ErrCorrupt), "size differs")
	g.Expect(s.Check(Archive{Digest: "sha256:../../etc", Size: 1})).To(MatchError(ErrCorrupt), "not a digest")

	flipped, err := os.ReadFile(blob)
	g.Expect(err).NotTo(HaveOccurred())
	flipped[10] ^= 0xff
	g.Expect(os.WriteFile(blob, flipped, 0o600)).To(Succeed())
	g.Expect(s.Check(a)).To(Succeed(), "the cheap check sees only the size")
	_, err = s.Open(a)
	g.Expect(err).To(MatchError(ErrCorrupt))
	g.Expect(s.Check(a)).To(MatchError(ErrCorrupt), "set aside for good")

	g.Expect(s.Release("uid-1")).To(Succeed())
	g.Expect(entries(g, filepath.Join(s.dir, "sha256"))).To(BeEmpty(), "the corrupt archive goes with its last reference")
	g.Expect(s.Check(a)).To(MatchError(ErrMissing))
}

func TestOpenClearsUnfinishedCaptures(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	s, err := Open(dir)
	g.Expect(err).NotTo(HaveOccurred())
	f, err := s.Create()
	g.Expect(err).NotTo(HaveOccurred())
	f.Close()
	_, err = Open(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries(g, filepath.Join(dir, "tmp"))).To(BeEmpty())
}

func TestOpenFailsOnAFolderItCannotWrite(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "a-file")
	g.Expect(os.WriteFile(file, nil, 0o600)).To(Succeed())
	_, err := Open(filepath.Join(file, "store"))
	g.Expect(err).To(HaveOccurred())
}
