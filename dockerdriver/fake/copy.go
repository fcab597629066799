package fake

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"sort"
	"strings"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// entry is a file or directory in the fake's file trees.
type entry struct {
	dir  bool
	data []byte
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
	_, err := call(f, ctx, OpCopyTo, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseCopy)
		if err != nil {
			return struct{}{}, err
		}
		dir = path.Clean(dir)
		if c.onReadOnlyRoot(dir) {
			return struct{}{}, dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the outcome is unknown")
		}
		if files, rel := f.resolve(c, dir); !isDir(files, rel) {
			return struct{}{}, dd.NewError(dd.KindNotFound, dd.PhaseCopy, name, "the directory does not exist")
		}
		tr := tar.NewReader(archive)
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return struct{}{}, dd.NewError(dd.KindInvalidSpec, dd.PhaseCopy, name, "the archive is not a valid tar stream")
			}
			target := path.Join(dir, hdr.Name)
			files, rel := f.resolve(c, target)
			if rel == "" {
				continue // the directory itself (e.g. "./")
			}
			switch hdr.Typeflag {
			case tar.TypeDir:
				files[rel] = entry{dir: true}
			case tar.TypeReg:
				data, err := io.ReadAll(tr)
				if err != nil {
					return struct{}{}, dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the archive broke off")
				}
				files[rel] = entry{data: data}
			}
		}
		for _, m := range c.spec.Mounts {
			f.forgetIfUnheld(m.Volume)
		}
		return struct{}{}, nil
	})
	return err
}

// resolve maps an absolute path in container c to the file tree holding it (a mounted volume, longest
// mount first, or the container's own filesystem) and the path inside that tree. Called with f.mu held.
func (f *Driver) resolve(c *container, p string) (map[string]entry, string) {
	best := ""
	var files map[string]entry
	for _, m := range c.spec.Mounts {
		if (p == m.Target || strings.HasPrefix(p, m.Target+"/")) && len(m.Target) > len(best) {
			if v, ok := f.volumes[m.Volume]; ok {
				best, files = m.Target, v.files
			}
		}
	}
	if files == nil {
		return c.rootfs, strings.TrimPrefix(p, "/")
	}
	return files, strings.TrimPrefix(strings.TrimPrefix(p, best), "/")
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
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}
	if e.dir {
		hdr.Mode, hdr.Size, hdr.Typeflag = 0o755, 0, tar.TypeDir
	}
	// Writes into a bytes.Buffer cannot fail.
	_ = tw.WriteHeader(hdr)
	_, _ = tw.Write(e.data)
}
