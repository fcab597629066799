package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
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

// roomy is a store limit that the tests' archives never come near.
const roomy = 1 << 20

// commit stores data as ref's archive, reserving just its size.
func commit(g *WithT, s *Store, ref string, data []byte) (Archive, error) {
	f, err := s.Create(int64(len(data)), "team-a")
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
	s, err := Open(t.TempDir(), Limits{Store: roomy})
	g.Expect(err).NotTo(HaveOccurred())
	data := tarOf("a", "dir/b")
	a, err := commit(g, s, "uid-1", data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Digest).To(MatchRegexp(`^sha256:[a-f0-9]{64}$`))
	g.Expect(a.Size).To(BeEquivalentTo(len(data)))
	g.Expect(s.Check(a)).To(Succeed())
	g.Expect(entries(g, filepath.Join(s.dir, "tmp"))).To(BeEmpty(), "the temporary file is gone")
	g.Expect(s.stored).To(Equal(a.Size), "counted in the store's total")
	g.Expect(s.reserved).To(BeZero(), "its reservation given back")

	f, err := s.Open(a)
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	back, err := io.ReadAll(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back).To(Equal(data))
}

func TestCommitRefusesWhatIsNotACompleteTarStream(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir(), Limits{Store: roomy})
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
	s, err := Open(t.TempDir(), Limits{Store: roomy})
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
	s, err := Open(t.TempDir(), Limits{Store: roomy})
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
	s, err := Open(t.TempDir(), Limits{Store: roomy})
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
	g.Expect(s.stored).To(BeZero(), "and its bytes off the total")
}

func TestOpenClearsUnfinishedCaptures(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	s, err := Open(dir, Limits{Store: roomy})
	g.Expect(err).NotTo(HaveOccurred())
	f, err := s.Create(1, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	f.Close()
	_, err = Open(dir, Limits{Store: roomy})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries(g, filepath.Join(dir, "tmp"))).To(BeEmpty())
}

func TestOpenFailsOnAFolderItCannotWrite(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "a-file")
	g.Expect(os.WriteFile(file, nil, 0o600)).To(Succeed())
	_, err := Open(filepath.Join(file, "store"), Limits{Store: roomy})
	g.Expect(err).To(HaveOccurred())
}

func TestOpenRefusesALimitThatIsNotPositive(t *testing.T) {
	g := NewWithT(t)
	for _, limit := range []int64{0, -1} {
		_, err := Open(t.TempDir(), Limits{Store: limit})
		g.Expect(err).To(MatchError(ContainSubstring("must be a positive number of bytes")), "limit %d", limit)
	}
}

// TestStoreKeepsArchivesAndReservationsUnderItsLimit fills a store whose limit holds two archives of
// the tests' size and a half: the third reservation is refused, for a while (a capture under way holds
// the room) or until an archive is released (the archives kept fill it).
func TestStoreKeepsArchivesAndReservationsUnderItsLimit(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	one, other := tarOf("one"), tarOf("two")
	size := int64(len(one))
	g.Expect(other).To(HaveLen(len(one)))
	limit := 2*size + size/2
	s, err := Open(dir, Limits{Store: limit})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = commit(g, s, "uid-1", one)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = commit(g, s, "uid-2", one)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.stored).To(Equal(size), "an archive two Checkpoints share counts once")

	underWay, err := s.Create(size, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.Create(size, "team-a")
	var full *FullError
	g.Expect(errors.As(err, &full)).To(BeTrue(), "%v", err)
	g.Expect(*full).To(Equal(FullError{Want: size, Stored: size, Reserved: size, Limit: limit}))
	g.Expect(full.Transient()).To(BeTrue(), "the capture under way holds the room")
	g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("its limit is %d bytes", limit)))
	s.Discard(underWay)
	s.Discard(underWay)
	g.Expect(s.reserved).To(BeZero(), "discarding twice gives the room back once")

	_, err = commit(g, s, "uid-3", other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.stored).To(Equal(2 * size))
	_, err = s.Create(size, "team-a")
	g.Expect(errors.As(err, &full)).To(BeTrue(), "%v", err)
	g.Expect(full.Transient()).To(BeFalse(), "the archives kept fill the store")
	g.Expect(entries(g, filepath.Join(dir, "tmp"))).To(BeEmpty(), "a refused capture leaves no file")

	reopened, err := Open(dir, Limits{Store: limit})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reopened.stored).To(Equal(2*size), "a restarted agent counts what is kept")

	g.Expect(s.Release("uid-1")).To(Succeed())
	g.Expect(s.stored).To(Equal(2*size), "uid-2 still holds the shared archive")
	g.Expect(s.Release("uid-2")).To(Succeed())
	g.Expect(s.stored).To(Equal(size))
	c, err := s.Create(size, "team-a")
	g.Expect(err).NotTo(HaveOccurred(), "releasing made room")
	s.Discard(c)
}

func TestCommitRefusesAnArchiveLargerThanItsReservation(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir(), Limits{Store: roomy})
	g.Expect(err).NotTo(HaveOccurred())
	data := tarOf("bigger than reserved")
	c, err := s.Create(int64(len(data))-1, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Write(data)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s.Commit(c, "uid-1")
	g.Expect(err).To(MatchError(ContainSubstring("more than the")))
	g.Expect(entries(g, filepath.Join(s.dir, "sha256"))).To(BeEmpty())
	g.Expect(entries(g, filepath.Join(s.dir, "tmp"))).To(BeEmpty())
	g.Expect(s.stored).To(BeZero())
	g.Expect(s.reserved).To(BeZero())
}
