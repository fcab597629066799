package dockerdriver

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

func TestOwnedByRewritesOwnersAndDropsSetID(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	g.Expect(tw.WriteHeader(&tar.Header{Name: "bin", Mode: 0o4755, Size: 3, Uid: 0, Gid: 0, Uname: "root", Typeflag: tar.TypeReg})).To(Succeed())
	_, _ = tw.Write([]byte("abc"))
	g.Expect(tw.Close()).To(Succeed())

	tr := tar.NewReader(ownedBy(&buf, 65532, 1000))
	hdr, err := tr.Next()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{hdr.Uid, hdr.Gid, hdr.Uname, hdr.Mode}).To(Equal([]any{65532, 1000, "", int64(0o755)}))
	data, err := io.ReadAll(tr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal("abc"))
	_, err = tr.Next()
	g.Expect(err).To(Equal(io.EOF))
}

func TestOwnedByFailsABrokenArchive(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	g.Expect(tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: 1000, Typeflag: tar.TypeReg})).To(Succeed())
	_, _ = tw.Write(make([]byte, 100)) // cut short
	_, err := io.ReadAll(ownedBy(bytes.NewReader(buf.Bytes()), 1, 1))
	g.Expect(err).To(MatchError(io.ErrUnexpectedEOF), "the extraction must fail, not end as if complete")
}

func TestUserIDs(t *testing.T) {
	g := NewWithT(t)
	for user, want := range map[string][2]int{"65532:65532": {65532, 65532}, "1000": {1000, 1000}, "0:0": {0, 0}, "": {0, 0}} {
		uid, gid, err := UserIDs(user)
		g.Expect(err).NotTo(HaveOccurred(), user)
		g.Expect([2]int{uid, gid}).To(Equal(want), user)
	}
	_, _, err := UserIDs("sandbox")
	g.Expect(err).To(HaveOccurred())
}
