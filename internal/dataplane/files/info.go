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

// notRegular refuses to read p, which is neither a regular file nor a directory: a named pipe would block
// the reader until something wrote to it, and a device would read without end, so none is opened.
func notRegular(p string, m fs.FileMode) error {
	return badRequest("%s is %s: files reads only regular files and directories", p, KindOf(m))
}

// KindOf names what a path that is not a regular file is, for an error that refuses it.
func KindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a link"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file"
}
