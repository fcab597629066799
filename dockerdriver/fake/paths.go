package fake

import (
	"context"
	"io/fs"
	"path"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// StatPath reports a file or directory of the fake's trees; the fake has no symlinks.
func (f *Driver) StatPath(ctx context.Context, name, p string) (dd.PathStat, error) {
	return call(f, ctx, OpStatPath, name, func() (dd.PathStat, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseCopy)
		if err != nil {
			return dd.PathStat{}, err
		}
		p = path.Clean(p)
		files, rel := f.resolve(c, p)
		e, ok := files[rel]
		switch {
		case ok && !e.dir:
			return dd.PathStat{Name: path.Base(p), Size: int64(len(e.data)), Mode: e.perm()}, nil
		case isDir(files, rel):
			return dd.PathStat{Name: path.Base(p), Mode: fs.ModeDir | e.perm()}, nil
		}
		return dd.PathStat{}, dd.NewError(dd.KindNotFound, dd.PhaseCopy, name, "not found")
	})
}

// RenamePath moves a file or a directory with what is under it, across volumes too, as mv does; like the
// real driver's mv it needs a running container and fails (Conflict) where mv would.
func (f *Driver) RenamePath(ctx context.Context, name, from, to string) error {
	_, err := call(f, ctx, OpRenamePath, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.runningTarget(name)
		if err != nil {
			return struct{}{}, err
		}
		from, to = path.Clean(from), path.Clean(to)
		src, srcRel := f.resolve(c, from)
		dst, dstRel := f.resolve(c, to)
		parent, parentRel := f.resolve(c, path.Dir(to))
		switch {
		case !hasFile(src, srcRel) && !isDir(src, srcRel):
			return struct{}{}, commandFailed(name, "mv: can't rename '"+from+"': No such file or directory")
		case isDir(dst, dstRel):
			return struct{}{}, commandFailed(name, "mv: '"+to+"' is a directory")
		case !isDir(parent, parentRel):
			return struct{}{}, commandFailed(name, "mv: can't rename '"+from+"': No such file or directory")
		case c.onReadOnlyRoot(from) || c.onReadOnlyRoot(to):
			return struct{}{}, commandFailed(name, "mv: can't rename '"+from+"': Read-only file system")
		}
		moved := map[string]entry{}
		for k, e := range src {
			if k == srcRel {
				moved[""] = e
			} else if sub, ok := under(k, srcRel); ok {
				moved[sub] = e
			}
		}
		for k := range moved {
			delete(src, path.Join(srcRel, k))
		}
		delete(src, srcRel)
		for k, e := range moved {
			dst[path.Join(dstRel, k)] = e
		}
		return struct{}{}, nil
	})
	return err
}

// RemovePath removes a file, or a directory and what is under it with recursive, as rm -f[r] does.
func (f *Driver) RemovePath(ctx context.Context, name, p string, recursive bool) error {
	_, err := call(f, ctx, OpRemovePath, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.runningTarget(name)
		if err != nil {
			return struct{}{}, err
		}
		p = path.Clean(p)
		files, rel := f.resolve(c, p)
		dir := isDir(files, rel)
		switch {
		case !dir && !hasFile(files, rel):
			return struct{}{}, nil
		case dir && !recursive:
			return struct{}{}, commandFailed(name, "rm: '"+p+"' is a directory")
		case c.onReadOnlyRoot(p):
			return struct{}{}, commandFailed(name, "rm: can't remove '"+p+"': Read-only file system")
		}
		for k := range files {
			if _, ok := under(k, rel); ok || k == rel {
				delete(files, k)
			}
		}
		return struct{}{}, nil
	})
	return err
}

// commandFailed is the error of a path command that ran and failed, with the line it would write to stderr.
func commandFailed(name, line string) error {
	return dd.NewError(dd.KindConflict, dd.PhaseExec, name, line)
}
