package checkpoint

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRetarPlacesEntriesUnderTheirFolder(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("ü", 80) + " file.txt" // past what a plain ustar header holds
	var in bytes.Buffer
	tw := tar.NewWriter(&in)
	for _, hdr := range []*tar.Header{
		{Name: "deep/", Typeflag: tar.TypeDir, Mode: 0o700},
		{Name: "deep/" + long, Typeflag: tar.TypeReg, Mode: 0o600, Size: 3},
		{Name: "deep/again", Typeflag: tar.TypeLink, Linkname: "deep/" + long},
		{Name: "deep/link", Typeflag: tar.TypeSymlink, Linkname: "../elsewhere"},
	} {
		g.Expect(tw.WriteHeader(hdr)).To(Succeed())
		if hdr.Size > 0 {
			_, err := tw.Write([]byte("abc"))
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	g.Expect(tw.Close()).To(Succeed())

	var out bytes.Buffer
	ow := tar.NewWriter(&out)
	g.Expect(retar(ow, &in, "keep/it")).To(Succeed())
	g.Expect(ow.Close()).To(Succeed())

	type entry struct {
		name, link string
		mode       int64
		typ        byte
	}
	var got []entry
	tr := tar.NewReader(&out)
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		got = append(got, entry{hdr.Name, hdr.Linkname, hdr.Mode, hdr.Typeflag})
	}
	g.Expect(got).To(Equal([]entry{
		{"keep/it/deep/", "", 0o700, tar.TypeDir},
		{"keep/it/deep/" + long, "", 0o600, tar.TypeReg},
		{"keep/it/deep/again", "keep/it/deep/" + long, 0, tar.TypeLink},
		{"keep/it/deep/link", "../elsewhere", 0, tar.TypeSymlink},
	}))
}
