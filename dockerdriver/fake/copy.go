package fake

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// entry is a file or directory in the fake's file trees.
type entry struct {
	dir  bool
	data []byte
	mode fs.FileMode // permission bits; 0 for the defaults, 0644 and 0755
	// sparse marks a file of holes only (as `truncate -s` makes): it takes no room in its volume, yet
	// Docker's archive API sends it in full, zeros and all.
	sparse bool
}

// perm is the entry's permission bits.
func (e entry) perm() fs.FileMode {
	switch {
	case e.mode != 0:
		return e.mode
	case e.dir:
		return 0o755
	}
	return 0o644
}

// CopyFrom returns path as a tar archive laid out as Docker's archive API does: entries under the
// path's base name, or under "./" for a path ending in "/.".
func (f *Driver) CopyFrom(ctx context.Context, name, p string) (io.ReadCloser, error) {
	return call(f, ctx, OpCopyFrom, name, func() (io.ReadCloser, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseCopy)
		if err != nil {
			return nil, err
		}
		base := path.Base(path.Clean(p))
		if strings.HasSuffix(p, "/.") {
			base = "."
		}
		files, rel := f.resolve(c, path.Clean(p))
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		switch {
		case !isDir(files, rel) && !hasFile(files, rel):
			return nil, dd.NewError(dd.KindNotFound, dd.PhaseCopy, name, "the path does not exist")
		case !isDir(files, rel):
			writeEntry(tw, base, files[rel])
		default:
			writeEntry(tw, base+"/", entry{dir: true})
			for _, k := range sortedKeys(files) {
				if sub, ok := under(k, rel); ok {
					e := files[k]
					if e.dir {
						sub += "/"
					}
					writeEntry(tw, base+"/"+sub, e)
				}
			}
		}
		if err := tw.Close(); err != nil {
			return nil, dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the archive could not be written")
		}
		return io.NopCloser(&buf), nil
	})
}

// CopyTo extracts a tar archive into dir. Like Docker, content written into a tmpfs volume that no running
// container holds is lost at once, and a read-only root file system takes nothing outside the mounts (Docker
// answers that with a server error, which the real driver cannot tell from a call that broke: Uncertain).
func (f *Driver) CopyTo(ctx context.Context, name, dir string, archive io.Reader) error {
	_, err := call(f, ctx, OpCopyTo, name, func() (struct{}, error) { return struct{}{}, f.extract(name, dir, archive) })
	return err
}

// CopyToAsUser extracts like CopyTo; the fake keeps no owners, so there is nothing more to it.
func (f *Driver) CopyToAsUser(ctx context.Context, name, dir string, archive io.Reader) error {
	_, err := call(f, ctx, OpCopyToAsUser, name, func() (struct{}, error) { return struct{}{}, f.extract(name, dir, archive) })
	return err
}

// extract plays Docker's extraction of a tar archive into dir: entries land as they are read, so an archive
// that breaks off or fills a volume (past its size: NoSpace) leaves what was written so far, the entry it
// was in the middle of included, as Docker does.
func (f *Driver) extract(name, dir string, archive io.Reader) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.existing(name, dd.PhaseCopy)
	if err != nil {
		return err
	}
	dir = path.Clean(dir)
	if c.onReadOnlyRoot(dir) {
		return dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the outcome is unknown")
	}
	if files, rel := f.resolve(c, dir); !isDir(files, rel) {
		return dd.NewError(dd.KindNotFound, dd.PhaseCopy, name, "the directory does not exist")
	}
	defer func() {
		for _, m := range c.spec.Mounts {
			f.forgetIfUnheld(m.Volume)
		}
	}()
	tr := tar.NewReader(archive)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return dd.NewError(dd.KindInvalidSpec, dd.PhaseCopy, name, "the archive is not a valid tar stream")
		}
		target := path.Join(dir, hdr.Name)
		files, rel := f.resolve(c, target)
		if rel == "" {
			continue // the directory itself (e.g. "./")
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			files[rel] = entry{dir: true, mode: fs.FileMode(hdr.Mode).Perm()}
		case tar.TypeReg:
			room := f.room(c, target)
			data, err := io.ReadAll(io.LimitReader(tr, room+1))
			if int64(len(data)) > room {
				files[rel] = entry{data: data[:room], mode: fs.FileMode(hdr.Mode).Perm()}
				return dd.NewError(dd.KindNoSpace, dd.PhaseCopy, name, "the file system is full")
			}
			files[rel] = entry{data: data, mode: fs.FileMode(hdr.Mode).Perm()}
			if err != nil {
				return dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the archive broke off")
			}
		}
	}
}

// room is how many more bytes the file system holding p takes: a volume's size less what its files hold,
// or unbounded elsewhere. Called with f.mu held.
func (f *Driver) room(c *container, p string) int64 {
	v := f.volumeAt(c, p)
	if v == nil || v.info.SizeBytes == 0 {
		return math.MaxInt64 - 1
	}
	used := int64(0)
	for _, e := range v.files {
		if !e.sparse {
			used += int64(len(e.data))
		}
	}
	return max(0, v.info.SizeBytes-used)
}

// resolve maps an absolute path in container c to the file tree holding it (a mounted volume, longest
// mount first, or the container's own filesystem) and the path inside that tree. Called with f.mu held.
func (f *Driver) resolve(c *container, p string) (map[string]entry, string) {
	target, v := f.mountAt(c, p)
	if v == nil {
		return c.rootfs, strings.TrimPrefix(p, "/")
	}
	return v.files, strings.TrimPrefix(strings.TrimPrefix(p, target), "/")
}

// volumeAt is the volume mounted where p lies in container c, or nil for its own file system.
func (f *Driver) volumeAt(c *container, p string) *volume {
	_, v := f.mountAt(c, p)
	return v
}

// mountAt finds the volume mount of container c that holds p, longest mount first, and its target.
func (f *Driver) mountAt(c *container, p string) (string, *volume) {
	best := ""
	var found *volume
	for _, m := range c.spec.Mounts {
		if (p == m.Target || strings.HasPrefix(p, m.Target+"/")) && len(m.Target) > len(best) {
			if v, ok := f.volumes[m.Volume]; ok {
				best, found = m.Target, v
			}
		}
	}
	return best, found
}

// isDir tells whether rel is a directory of files: the tree's root, a directory entry, or a parent.
func isDir(files map[string]entry, rel string) bool {
	if rel == "" || files[rel].dir {
		return true
	}
	for k := range files {
		if strings.HasPrefix(k, rel+"/") {
			return true
		}
	}
	return false
}

func hasFile(files map[string]entry, rel string) bool {
	_, ok := files[rel]
	return ok
}

// under returns k relative to the directory rel, if k lies below it.
func under(k, rel string) (string, bool) {
	if rel == "" {
		return k, true
	}
	return strings.CutPrefix(k, rel+"/")
}

func sortedKeys(files map[string]entry) []string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeEntry(tw *tar.Writer, name string, e entry) {
	hdr := &tar.Header{Name: name, Mode: int64(e.perm()), Size: int64(len(e.data)), Typeflag: tar.TypeReg}
	if e.dir {
		hdr.Size, hdr.Typeflag = 0, tar.TypeDir
	}
	// Writes into a bytes.Buffer cannot fail.
	_ = tw.WriteHeader(hdr)
	_, _ = tw.Write(e.data)
}

// WriteSparse makes p in container name a file of size bytes that are all holes, as a process in the
// container running `truncate -s` would: it takes no room in its volume, and a copy out sends it in full.
func (f *Driver) WriteSparse(name, p string, size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.existing(name, dd.PhaseCopy)
	if err != nil {
		return err
	}
	files, rel := f.resolve(c, path.Clean(p))
	files[rel] = entry{data: make([]byte, size), sparse: true}
	return nil
}
