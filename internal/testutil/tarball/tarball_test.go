package tarball

import (
	"archive/tar"
	"maps"
	"testing"
)

func TestFilesReadsBackWhatOfWrote(t *testing.T) {
	files := map[string]string{"notes.txt": "hello", "src/": "", "src/main.go": "package main", "empty": ""}
	if got := Files(t, Of(t, files)); !maps.Equal(got, files) {
		t.Errorf("Files(Of(%v)) = %v", files, got)
	}
	if got := First(t, Of(t, files)); got != "" {
		t.Errorf("First = %q, want the content of %q, the first name in order", got, "empty")
	}
}

func TestOfWritesFoldersAndFilesInNameOrder(t *testing.T) {
	tr := tar.NewReader(Of(t, map[string]string{"b.txt": "b", "a/": "ignored", "a/c.txt": "c"}))
	type entry struct {
		name string
		mode int64
		typ  byte
	}
	var got []entry
	for hdr, err := tr.Next(); err == nil; hdr, err = tr.Next() {
		got = append(got, entry{hdr.Name, hdr.Mode, hdr.Typeflag})
	}
	want := []entry{{"a/", 0o755, tar.TypeDir}, {"a/c.txt", 0o644, tar.TypeReg}, {"b.txt", 0o644, tar.TypeReg}}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %v, want %v", i, got[i], want[i])
		}
	}
}
