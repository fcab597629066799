package checkpoint

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestCaptureBoundIsTheSizeAnEighthMoreAndAMiB(t *testing.T) {
	g := NewWithT(t)
	g.Expect(captureBound(16 << 20)).To(BeEquivalentTo(19 << 20))
	g.Expect(captureBound(1 << 20)).To(BeEquivalentTo(1<<20 + 128<<10 + 1<<20))
	g.Expect(captureBound(8 << 30)).To(BeEquivalentTo(9<<30 + 1<<20))
}

func TestBoundedWriterRefusesTheWriteThatWouldPassTheBound(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	w := &boundedWriter{w: &out, left: 10}
	n, err := w.Write([]byte("0123456"))
	g.Expect(n, err).To(Equal(7))
	n, err = w.Write([]byte("789"))
	g.Expect(n, err).To(Equal(3), "up to the bound exactly is fine")
	n, err = w.Write([]byte("x"))
	g.Expect(err).To(MatchError(errCaptureTooLarge))
	g.Expect(n).To(BeZero())
	g.Expect(out.String()).To(Equal("0123456789"), "nothing past the bound was written")
}

// sparseArchive is what Docker's archive API sends for a workspace holding one sparse 2 GiB file: a header
// and then 2 GiB of zeros. It counts what was read from it and whether it was closed.
type sparseArchive struct {
	r      io.Reader
	read   int64
	closed bool
}

func newSparseArchive(g *WithT) *sparseArchive {
	var hdr bytes.Buffer
	g.Expect(tar.NewWriter(&hdr).WriteHeader(&tar.Header{Name: "sparse", Mode: 0o644, Size: 2 << 30, Typeflag: tar.TypeReg})).To(Succeed())
	return &sparseArchive{r: io.MultiReader(&hdr, io.LimitReader(zeros{}, 2<<30))}
}

func (s *sparseArchive) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.read += int64(n)
	return n, err
}

func (s *sparseArchive) Close() error {
	s.closed = true
	return nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// sparseDriver answers CopyFrom with a sparse archive; the capture's copy calls nothing else.
type sparseDriver struct {
	dd.Driver
	archive *sparseArchive
}

func (d *sparseDriver) CopyFrom(context.Context, string, string) (io.ReadCloser, error) {
	return d.archive, nil
}

func TestCopyWorkspaceStopsReadingAtTheBound(t *testing.T) {
	const bound = 3 << 20
	for name, paths := range map[string][]string{"whole workspace": nil, "listed paths": {"sparse"}} {
		g := NewWithT(t)
		d := &sparseDriver{archive: newSparseArchive(g)}
		var out bytes.Buffer
		err := copyWorkspace(context.Background(), d, "holder", paths, &boundedWriter{w: &out, left: bound})
		g.Expect(errors.Is(err, errCaptureTooLarge)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(out.Len()).To(BeNumerically("<=", bound), name)
		g.Expect(d.archive.read).To(BeNumerically("<", bound+64<<10), "%s: read only as far as the bound and one buffer more", name)
		g.Expect(d.archive.closed).To(BeTrue(), "%s: the stream from Docker is closed, so Docker stops sending", name)
	}
}
