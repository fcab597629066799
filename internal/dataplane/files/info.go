package files

import (
	"archive/tar"
	"fmt"
	"io/fs"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// FileInfo is what stat and list report of one path.
type FileInfo struct {
	Name  string    `json:"name"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"` // permission bits in octal, like "0644"
	Mtime time.Time `json:"mtime"`
	Type  string    `json:"type"`           // file, dir, symlink or other
	Link  string    `json:"link,omitempty"` // a symlink's target
}

func infoOf(st dd.PathStat) FileInfo {
	return FileInfo{
		Name: st.Name, Size: st.Size, Mode: perm(st.Mode), Mtime: st.Mtime.UTC(), Type: typeOf(st.Mode), Link: st.LinkTarget,
	}
}

func infoOfHeader(name string, hdr *tar.Header) FileInfo {
	mode := hdr.FileInfo().Mode()
	return FileInfo{Name: name, Size: hdr.Size, Mode: perm(mode), Mtime: hdr.ModTime.UTC(), Type: typeOf(mode), Link: hdr.Linkname}
}

func perm(m fs.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }

func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}
