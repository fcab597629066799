// Package tarball builds and reads the small tar streams of the tests: what they copy into containers and
// read back out of them through Docker's archive API (and the fake driver's), and Checkpoint archives. It lives
// under internal/ rather than test/internal because the unit tests of dockerdriver/fake, internal/archive and
// the reconcilers use it as well as the suites under test/.
package tarball

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"sort"
	"strings"
)

// T is what the helpers need of a test to report a broken stream: *testing.T, *testing.B or GinkgoT().
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Of is a tar stream of files (name → content) in name order: a name ending in "/" is a folder (mode 0755,
// its content ignored), any other a regular file (mode 0644).
func Of(t T, files map[string]string) *bytes.Reader {
	t.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			hdr.Mode, hdr.Size, hdr.Typeflag = 0o755, 0, tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("tar header of %s: %v", name, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if _, err := io.WriteString(tw, files[name]); err != nil {
			t.Fatalf("tar content of %s: %v", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("closing a tar stream: %v", err)
	}
	return bytes.NewReader(buf.Bytes())
}

// Files reads every entry of a tar stream into name → content, under the names the stream gives them (a
// folder's ends in "/" and has no content).
func Files(t T, r io.Reader) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading a tar stream: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("reading %s from a tar stream: %v", hdr.Name, err)
		}
		files[hdr.Name] = string(data)
	}
}

// First is the content of the first entry of a tar stream: the file, when the stream is what Docker's
// archive API gives for the path of one file.
func First(t T, r io.Reader) string {
	t.Helper()
	tr := tar.NewReader(r)
	hdr, err := tr.Next()
	if err != nil {
		t.Fatalf("reading the first entry of a tar stream: %v", err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatalf("reading %s from a tar stream: %v", hdr.Name, err)
	}
	return string(data)
}
