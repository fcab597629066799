package archive

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// commitIn stores data as the archive of ref, a Checkpoint of namespace, reserving just its size.
func commitIn(g *WithT, s *Store, namespace, ref string, data []byte) Archive {
	c, err := s.Create(int64(len(data)), namespace)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Write(data)
	g.Expect(err).NotTo(HaveOccurred())
	a, err := s.Commit(c, ref)
	g.Expect(err).NotTo(HaveOccurred())
	return a
}

func namespaceQuota(g *WithT, err error) *NamespaceQuotaError {
	var q *NamespaceQuotaError
	g.Expect(errors.As(err, &q)).To(BeTrue(), "%v", err)
	return q
}

func TestOpenRefusesANegativeCapPerNamespace(t *testing.T) {
	g := NewWithT(t)
	_, err := Open(t.TempDir(), Limits{Store: roomy, Namespace: -1})
	g.Expect(err).To(MatchError(ContainSubstring("the cap per namespace must be a positive number of bytes, or 0 for none, not -1")))
}

func TestNoCapPerNamespaceLeavesCapturesTheirBound(t *testing.T) {
	g := NewWithT(t)
	s, err := Open(t.TempDir(), Limits{Store: roomy})
	g.Expect(err).NotTo(HaveOccurred())
	commitIn(g, s, "team-a", "uid-1", tarOf("kept"))
	c, err := s.Create(roomy/2, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Most()).To(BeEquivalentTo(roomy / 2))
	g.Expect(c.Quota()).To(BeNil())
	s.Discard(c)
}

// TestCapPerNamespaceBoundsACaptureByTheRoomItsNamespaceHasLeft: a capture may write only what the
// namespace's archives kept leave under its cap, and another namespace's room is its own.
func TestCapPerNamespaceBoundsACaptureByTheRoomItsNamespaceHasLeft(t *testing.T) {
	g := NewWithT(t)
	kept := tarOf("kept")
	size := int64(len(kept))
	limit := 3 * size
	s, err := Open(t.TempDir(), Limits{Store: roomy, Namespace: limit})
	g.Expect(err).NotTo(HaveOccurred())
	commitIn(g, s, "team-a", "uid-1", kept)

	c, err := s.Create(roomy/2, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Most()).To(Equal(limit-size), "the room its namespace has left")
	g.Expect(*c.Quota()).To(Equal(NamespaceQuotaError{Namespace: "team-a", Want: roomy / 2, Used: size, Limit: limit}))
	g.Expect(s.reserved).To(Equal(limit-size), "the store reserves the smaller bound")
	s.Discard(c)

	small, err := s.Create(size, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(small.Most()).To(Equal(size), "a capture that fits keeps its own bound")
	g.Expect(small.Quota()).To(BeNil())
	s.Discard(small)

	other, err := s.Create(roomy/2, "team-b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Most()).To(Equal(limit), "team-a's archives take nothing of team-b's room")
	s.Discard(other)
}

// TestNamespaceAtItsCapIsRefusedUntilACheckpointOfItIsReleased: once the archives kept fill the cap, a
// capture is refused for good, before any file is made; releasing one of them makes room.
func TestNamespaceAtItsCapIsRefusedUntilACheckpointOfItIsReleased(t *testing.T) {
	g := NewWithT(t)
	one, two := tarOf("one"), tarOf("two")
	size := int64(len(one))
	dir := t.TempDir()
	s, err := Open(dir, Limits{Store: roomy, Namespace: 2 * size})
	g.Expect(err).NotTo(HaveOccurred())
	commitIn(g, s, "team-a", "uid-1", one)
	commitIn(g, s, "team-a", "uid-2", one)
	commitIn(g, s, "team-a", "uid-3", two)

	_, err = s.Create(1, "team-a")
	q := namespaceQuota(g, err)
	g.Expect(*q).To(Equal(NamespaceQuotaError{Namespace: "team-a", Want: 1, Used: 2 * size, Limit: 2 * size}), "a shared archive counts once")
	g.Expect(q.Transient()).To(BeFalse(), "its archives kept fill the cap")
	g.Expect(err.Error()).To(ContainSubstring("the Checkpoints of namespace team-a hold"))
	g.Expect(entries(g, filepath.Join(dir, "tmp"))).To(BeEmpty(), "a refused capture leaves no file")

	reopened, err := Open(dir, Limits{Store: roomy, Namespace: 2 * size})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = reopened.Create(1, "team-a")
	g.Expect(namespaceQuota(g, err).Used).To(Equal(2*size), "a restarted agent counts what the namespace keeps")

	g.Expect(s.Release("uid-1")).To(Succeed())
	_, err = s.Create(1, "team-a")
	g.Expect(namespaceQuota(g, err).Used).To(Equal(2*size), "uid-2 still holds the shared archive")
	g.Expect(s.Release("uid-3")).To(Succeed())
	c, err := s.Create(size, "team-a")
	g.Expect(err).NotTo(HaveOccurred(), "releasing made room")
	s.Discard(c)
}

// TestCapPerNamespaceCountsAnArchiveSharedAcrossNamespacesInEach: either namespace's Checkpoint keeps the
// archive on disk alone, so each answers for all of it.
func TestCapPerNamespaceCountsAnArchiveSharedAcrossNamespacesInEach(t *testing.T) {
	g := NewWithT(t)
	same := tarOf("same")
	size := int64(len(same))
	s, err := Open(t.TempDir(), Limits{Store: roomy, Namespace: size})
	g.Expect(err).NotTo(HaveOccurred())
	commitIn(g, s, "team-a", "uid-a", same)
	commitIn(g, s, "team-b", "uid-b", same)
	g.Expect(s.stored).To(Equal(size), "stored once")
	for _, ns := range []string{"team-a", "team-b"} {
		_, err := s.Create(1, ns)
		g.Expect(namespaceQuota(g, err).Used).To(Equal(size), ns)
	}
}

// TestCapPerNamespaceWaitsForTheNamespacesCapturesUnderWay: a capture that would get less than the room its
// namespace's archives kept leave, because another capture of the namespace reserved part of it, waits
// instead of being cut short by a reservation that may come back.
func TestCapPerNamespaceWaitsForTheNamespacesCapturesUnderWay(t *testing.T) {
	g := NewWithT(t)
	const limit = 1000
	s, err := Open(t.TempDir(), Limits{Store: roomy, Namespace: limit})
	g.Expect(err).NotTo(HaveOccurred())
	underWay, err := s.Create(600, "team-a")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = s.Create(600, "team-a")
	q := namespaceQuota(g, err)
	g.Expect(*q).To(Equal(NamespaceQuotaError{Namespace: "team-a", Want: 600, Used: 0, Reserved: 600, Limit: limit}))
	g.Expect(q.Transient()).To(BeTrue(), "only a capture under way holds the room")

	fits, err := s.Create(400, "team-a")
	g.Expect(err).NotTo(HaveOccurred(), "what fits beside the capture under way starts")
	g.Expect(fits.Quota()).To(BeNil())
	s.Discard(fits)
	s.Discard(underWay)
	g.Expect(s.nsReserved).To(BeEmpty(), "the reservations are given back")

	c, err := s.Create(600, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	s.Discard(c)
}

// TestRefsOfStoresBeforeNamespacesCountToNoNamespace: a store written before refs held their namespace
// (empty ref files) keeps working; those archives count in the store's limit but in no namespace.
func TestRefsOfStoresBeforeNamespacesCountToNoNamespace(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	before, err := Open(dir, Limits{Store: roomy})
	g.Expect(err).NotTo(HaveOccurred())
	a := commitIn(g, before, "team-a", "uid-1", tarOf("old"))
	ref := filepath.Join(dir, "refs", hexOf(a.Digest), "uid-1")
	g.Expect(os.ReadFile(ref)).To(Equal([]byte("team-a")), "a ref holds its Checkpoint's namespace")
	g.Expect(os.WriteFile(ref, nil, 0o600)).To(Succeed())

	s, err := Open(dir, Limits{Store: roomy, Namespace: 10})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.stored).To(Equal(a.Size), "counted in the store's limit")
	c, err := s.Create(10, "team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Quota()).To(BeNil())
	s.Discard(c)
	g.Expect(s.Release("uid-1")).To(Succeed())
	g.Expect(s.Check(a)).To(MatchError(ErrMissing))
}
