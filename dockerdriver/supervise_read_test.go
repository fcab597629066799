package dockerdriver

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	. "github.com/onsi/gomega"
)

// zeros reads as endless zeros and counts what was read of it, as a sparse file's archive does.
type zeros struct{ read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

func TestReadRunStopsAtAFileFarPastTheCap(t *testing.T) {
	g := NewWithT(t)
	var head bytes.Buffer
	tw := tar.NewWriter(&head)
	g.Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "run/stdout", Size: 8 << 30, Mode: 0o600})).To(Succeed())
	z := &zeros{}
	res := readRunArchive(io.MultiReader(&head, z), 1024)
	g.Expect(res.Stdout).To(HaveLen(1024))
	g.Expect(res.StdoutCut).To(Equal(int64(8<<30 - 1024)))
	g.Expect(res.CutUnread).To(BeTrue(), "the cut file and stderr after it were not read")
	g.Expect(z.read).To(BeNumerically("<=", 1024+runSlack), "no more than the cap and a margin is read")
}

func TestReadRunReadsEveryFileWithinTheCap(t *testing.T) {
	g := NewWithT(t)
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, body := range map[string]string{"run/stdout": "0123456789", "run/stderr": "err", "run/cut": "7 0\n"} {
		g.Expect(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(body)), Mode: 0o600})).To(Succeed())
		_, err := tw.Write([]byte(body))
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(tw.Close()).To(Succeed())
	res := readRunArchive(&b, 4)
	g.Expect(string(res.Stdout)).To(Equal("0123"))
	g.Expect(res.StdoutCut).To(Equal(int64(6 + 7)))
	g.Expect(string(res.Stderr)).To(Equal("err"))
	g.Expect(res.StderrCut).To(BeZero())
	g.Expect(res.CutUnread).To(BeFalse())
}
