package files

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// listHost serves the entries of the directory at p (resolved in the container, in m) from the volume's host
// side: the directory read dirBatch names at a time and a stat per entry, where the archive API would send
// every byte the directory holds; more than maxListEntries are refused. Nothing is followed: an entry that is
// a link is reported as one, with its target as written.
func listHost(w http.ResponseWriter, root *os.File, m *Mount, p string) error {
	d, err := openIn(root, m, p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return hostError(err, p, m)
	}
	defer d.Close()
	items := []FileInfo{}
	for {
		names, err := d.Readdirnames(dirBatch)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return hostError(err, p, m)
		}
		for _, name := range names {
			info, err := entryInfo(int(d.Fd()), name)
			if errors.Is(err, unix.ENOENT) {
				continue // removed since the directory was read
			}
			if err != nil {
				return hostError(err, path.Join(p, name), m)
			}
			if len(items) == maxListEntries {
				return tooManyEntries(p)
			}
			items = append(items, info)
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return writeJSON(w, items)
}

// entryInfo is what list reports of the entry name of the directory dirfd, as its archive header would say
// it: a size for regular files only, a link's target as written.
func entryInfo(dirfd int, name string) (FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return FileInfo{}, &os.PathError{Op: "fstatat", Path: name, Err: err}
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	default:
		mode |= fs.ModeIrregular
	}
	info := FileInfo{Name: name, Mode: perm(mode), Mtime: time.Unix(st.Mtim.Unix()).UTC(), Type: typeOf(mode)}
	if mode.IsRegular() {
		info.Size = st.Size
	}
	if mode&fs.ModeSymlink != 0 {
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return FileInfo{}, &os.PathError{Op: "readlinkat", Path: name, Err: err}
		}
		info.Link = string(buf[:n])
	}
	return info, nil
}

// mkdirHost makes the directories names under base (resolved in the container, in m), each inside the one
// before, owned by the container's user (uid, gid) with mode 0755, as the archive API would.
func mkdirHost(root *os.File, m *Mount, base string, names []string, uid, gid int) error {
	d, err := openIn(root, m, base, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return hostError(err, base, m)
	}
	defer func() { d.Close() }()
	at := base
	for _, name := range names {
		at = path.Join(at, name)
		if err := unix.Mkdirat(int(d.Fd()), name, 0o755); err != nil {
			return hostError(err, at, m)
		}
		if err := unix.Fchownat(int(d.Fd()), name, uid, gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return hostError(err, at, m)
		}
		fd, err := unix.Openat(int(d.Fd()), name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return hostError(err, at, m)
		}
		d.Close()
		d = os.NewFile(uintptr(fd), at)
	}
	return nil
}

// removeHost removes p (resolved in the container, in m), and with recursive what a directory there holds,
// never following a link: a link is removed itself.
func removeHost(root *os.File, m *Mount, p string, recursive bool) error {
	d, err := openIn(root, m, path.Dir(p), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return hostError(err, p, m)
	}
	defer d.Close()
	err = removeAt(int(d.Fd()), path.Base(p), recursive, 0)
	var se *fileswire.StatusError
	switch {
	case errors.As(err, &se):
		return se
	case err != nil:
		return hostError(err, p, m)
	}
	return nil
}

// removeAt removes the entry name of the directory dirfd: a file or link, or a directory with what it
// holds when recursive. A directory is read dirBatch names at a time, each removed before the next are read
// (a directory read goes on past entries removed meanwhile), so no more names are held than one batch a
// level; it descends at most maxDepth levels below the first, one open directory each.
func removeAt(dirfd int, name string, recursive bool, depth int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if !errors.Is(err, unix.EISDIR) || !recursive {
		return err //nolint:wrapcheck // an errno, which hostError explains
	}
	if depth == maxDepth {
		return badRequest("the directory to remove holds directories more than %d deep, which files does not go: remove its deepest ones first, or run rm -r in the Sandbox", maxDepth)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err //nolint:wrapcheck // an errno, which hostError explains
	}
	dir := os.NewFile(uintptr(fd), name)
	defer dir.Close()
	for {
		names, err := dir.Readdirnames(dirBatch)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err //nolint:wrapcheck // the directory's read
		}
		for _, n := range names {
			if err := removeAt(fd, n, true, depth+1); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		}
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) //nolint:wrapcheck // an errno, which hostError explains
}
