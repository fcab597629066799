package files

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// copyBuffer is the block a body moves by between the client and the volume.
const copyBuffer = 1 << 20

// readHost serves the regular file at p (resolved in the container, in m) from the volume's host side. The
// open does not wait (O_NONBLOCK, which changes nothing for a regular file): p may have become a named pipe
// since it was resolved, which the file's own stat then refuses.
func readHost(w http.ResponseWriter, root *os.File, m *Mount, p string) error {
	f, err := openIn(root, m, p, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return hostError(err, p, m)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return hostError(err, p, m)
	case !st.Mode().IsRegular():
		return notRegular(p, st.Mode())
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	w.WriteHeader(http.StatusOK)
	// What the file grows by meanwhile is not sent: the length is said. A break cuts the body short of it,
	// which the client sees.
	_, _ = io.CopyBuffer(w, io.LimitReader(f, st.Size()), make([]byte, copyBuffer))
	return nil
}

// writeHost replaces the file name in the directory dir (resolved in the container, in m) with the request's
// body, through the volume's host side: a temporary file beside it, owned by the container's user (uid, gid)
// with mode, renamed over it once complete and removed on any failure, a client gone included. It reports
// the file written.
func writeHost(r *http.Request, root *os.File, m *Mount, dir, name string, mode fs.FileMode, uid, gid int) (dd.PathStat, error) {
	st, err := writeTemp(r, root, m, dir, name, mode, uid, gid)
	if err != nil {
		return dd.PathStat{}, err
	}
	return dd.PathStat{Name: name, Size: st.Size(), Mode: st.Mode(), Mtime: st.ModTime()}, nil
}

// writeTemp is writeHost's work; it reports the temporary file as renamed.
func writeTemp(r *http.Request, root *os.File, m *Mount, dir, name string, mode fs.FileMode, uid, gid int) (fs.FileInfo, error) {
	d, err := openIn(root, m, dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, hostError(err, dir, m)
	}
	defer d.Close()
	dst := dir + "/" + name
	tmp := tempName(name)
	fd, err := unix.Openat(int(d.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, hostError(err, dst, m)
	}
	f := os.NewFile(uintptr(fd), tmp)
	done := false
	defer func() {
		f.Close()
		if !done {
			_ = unix.Unlinkat(int(d.Fd()), tmp, 0) // root of the node: nothing stops it but the file's absence
		}
	}()
	// The owner first: a chown clears set-id bits, which mode never has anyway.
	if err := unix.Fchown(fd, uid, gid); err != nil {
		return nil, hostError(err, dst, m)
	}
	if err := unix.Fchmod(fd, uint32(mode.Perm())); err != nil {
		return nil, hostError(err, dst, m)
	}
	b := &body{r: r.Body, size: r.ContentLength}
	_, err = io.CopyBuffer(struct{ io.Writer }{f}, b, make([]byte, copyBuffer)) // not os.File's ReadFrom, whose buffer is small
	var se *fileswire.StatusError
	if errors.As(err, &se) {
		return nil, se
	}
	if short, got := b.cutShort(); short && !errors.Is(err, unix.ENOSPC) {
		return nil, badRequest("the upload broke off after %d bytes; nothing was written", got)
	}
	var st fs.FileInfo
	if err == nil {
		st, err = f.Stat()
	}
	if err != nil {
		return nil, hostError(err, dst, m)
	}
	if err := unix.Renameat(int(d.Fd()), tmp, int(d.Fd()), name); err != nil {
		return nil, hostError(err, dst, m)
	}
	done = true
	return st, nil
}
