package files

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// cleanupTimeout bounds the removal of a temporary file after a failed write, which runs even when the
// request's context is over (the client went away).
const cleanupTimeout = time.Minute

// write replaces the file at p with the request's body, atomically: the body is spooled on the node, then
// copied into a temporary file in the same directory, which is renamed over p once complete. On any failure,
// a client gone included, the temporary file is removed and p is as it was.
func (h *Handler) write(ctx context.Context, w http.ResponseWriter, r *http.Request, t Target, p string) error {
	mode, err := fileMode(r.URL.Query().Get("mode"))
	if err != nil {
		return err
	}
	dir, info, err := h.changeIn(ctx, t, path.Dir(p))
	if err != nil {
		return err
	}
	dst := path.Join(dir.path, path.Base(p))
	m, err := t.writable(dst)
	if err != nil {
		return err
	}
	if err := tooLarge(r, t, m, p, 1); err != nil {
		return err
	}
	if err := existingDir(dir, path.Dir(p)); err != nil {
		return err
	}
	if st, err := h.statPath(ctx, t, dst); err == nil && st.IsDir() {
		return conflict("%s is a directory", p)
	}
	if vm, root := h.volumeOf(ctx, t, dir.path); root != nil {
		defer root.Close()
		return writeVolume(w, r, info, root, vm, dst, mode)
	}
	tmp := path.Join(dir.path, tempName(path.Base(p)))
	// Removing the temporary name first checks that the container runs and its image has rm, without
	// which nothing written could be taken back.
	if err := h.Driver.RemovePath(ctx, t.Container, tmp, false); err != nil {
		return driverError(err, t)
	}
	data, err := h.spoolBody(r, t, m, p, 1)
	if err != nil {
		return err
	}
	defer data.Close()
	hdr := &tar.Header{Name: path.Base(tmp), Size: data.size, Mode: int64(mode), ModTime: time.Now(), Typeflag: tar.TypeReg}
	if err := h.copyTo(ctx, t, dir.path, oneFile(hdr, data)); err != nil {
		h.discard(ctx, t, tmp)
		return writeError(err, t, m)
	}
	if err := h.Driver.RenamePath(ctx, t.Container, tmp, dst); err != nil {
		h.discard(ctx, t, tmp)
		return driverError(err, t)
	}
	return h.statTo(ctx, w, t, dst, http.StatusCreated)
}

// writeVolume is write on the volume's host side, as the container's user.
func writeVolume(w http.ResponseWriter, r *http.Request, info dd.ContainerInfo, root *os.File, m *Mount, dst string, mode fs.FileMode) error {
	uid, gid, err := dd.UserIDs(info.User)
	if err != nil {
		return internal("the container's user %q is not numeric", info.User)
	}
	st, err := writeHost(r, root, m, path.Dir(dst), path.Base(dst), mode, uid, gid)
	if err != nil {
		return err
	}
	// What was written, as the host's side saw it: the path may lead elsewhere by now (a directory swapped
	// for a link), and the archive API would stat that.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	return writeJSONBody(w, infoOf(st))
}

// tooLarge refuses a body whose length is more than factor times the bound of where it goes.
func tooLarge(r *http.Request, t Target, m *Mount, what string, factor int64) error {
	bound, name := boundOf(t, m)
	if bound > 0 && r.ContentLength > factor*bound {
		return insufficientStorage("%s (%s) is larger than %s: %s", what, sizeOf(r.ContentLength), name, sizeOf(bound))
	}
	return nil
}

// boundOf is the size bound of m (nil: the root file system) and what people call it.
func boundOf(t Target, m *Mount) (int64, string) {
	if m != nil {
		return m.SizeBytes, m.Name
	}
	return t.RootBytes, "the root file system"
}

// spoolBody spools a request's body on the node, refusing more than factor times the bound of where it goes.
func (h *Handler) spoolBody(r *http.Request, t Target, m *Mount, what string, factor int64) (*spooled, error) {
	if err := tooLarge(r, t, m, what, factor); err != nil {
		return nil, err
	}
	bound, name := boundOf(t, m)
	b := &body{r: r.Body, size: r.ContentLength}
	data, err := spool(h.SpoolDir, b, factor*bound)
	var se *fileswire.StatusError
	switch short, got := b.cutShort(); {
	case err == nil:
		return data, nil
	case errors.As(err, &se):
		return nil, se
	case errors.Is(err, errTooLarge):
		return nil, insufficientStorage("%s is larger than %s: %s", what, name, sizeOf(bound))
	case short:
		return nil, badRequest("the upload broke off after %d bytes; nothing was written", got)
	}
	return nil, internal("the node could not hold the upload: %v", err)
}

// mkdir makes the directory p, and with parents the missing ones above it; with parents an existing
// directory is fine, as with mkdir -p. The archive API makes them, in any image.
func (h *Handler) mkdir(ctx context.Context, w http.ResponseWriter, t Target, p string, parents bool) error {
	info, err := h.running(ctx, t)
	if err != nil {
		return err
	}
	n, err := h.resolve(ctx, t, p, true)
	if err != nil {
		return err
	}
	if _, err := t.writable(n.path); err != nil {
		return err
	}
	switch {
	case n.stat != nil && n.stat.IsDir() && parents:
		return h.statTo(ctx, w, t, n.path, http.StatusOK)
	case n.stat != nil:
		return conflict("%s already exists", p)
	}
	// The deepest existing directory above p, and the directories to make under it.
	base, missing := n.path, []string(nil)
	for {
		missing = append([]string{path.Base(base)}, missing...)
		base = path.Dir(base)
		if st, err := h.statPath(ctx, t, base); err == nil {
			if !st.IsDir() {
				return conflict("%s is not a directory", base)
			}
			break
		} else if !dd.IsNotFound(err) {
			return driverError(err, t)
		}
	}
	if len(missing) > 1 && !parents {
		return notFound("%s does not exist: pass parents=true to make it", path.Dir(p))
	}
	if _, err := t.writable(base); err != nil {
		return err
	}
	if vm, root := h.volumeOf(ctx, t, base); root != nil {
		defer root.Close()
		uid, gid, err := dd.UserIDs(info.User)
		if err != nil {
			return internal("the container's user %q is not numeric", info.User)
		}
		if err := mkdirHost(root, vm, base, missing, uid, gid); err != nil {
			return err
		}
	} else if err := h.copyTo(ctx, t, base, dirArchive(missing)); err != nil {
		return driverError(err, t)
	}
	return h.statTo(ctx, w, t, n.path, http.StatusCreated)
}

// remove removes p, and what is under it with recursive; never a mount, or what holds one.
func (h *Handler) remove(ctx context.Context, w http.ResponseWriter, t Target, p string, recursive bool) error {
	if _, err := h.running(ctx, t); err != nil {
		return err
	}
	n, err := h.resolve(ctx, t, p, false)
	if err != nil {
		return err
	}
	if _, err := t.writable(n.path); err != nil {
		return err
	}
	for _, m := range t.Mounts {
		if within(m.Path, n.path) {
			return forbidden("%s is or holds %s, a mount, which cannot be removed", p, m.Path)
		}
	}
	switch {
	case n.stat == nil:
		return notFound("%s does not exist", p)
	case n.stat.IsDir() && !recursive:
		return conflict("%s is a directory: pass recursive=true to remove it with what it holds", p)
	}
	if vm, root := h.volumeOf(ctx, t, n.path); root != nil {
		defer root.Close()
		if err := removeHost(root, vm, n.path, recursive); err != nil {
			return err
		}
	} else if err := h.Driver.RemovePath(ctx, t.Container, n.path, recursive); err != nil {
		return driverError(err, t)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// changeIn checks that the container can take a change and resolves the directory it goes into; it reports
// the container too, whose user owns what is written.
func (h *Handler) changeIn(ctx context.Context, t Target, dir string) (node, dd.ContainerInfo, error) {
	info, err := h.running(ctx, t)
	if err != nil {
		return node{}, info, err
	}
	n, err := h.resolve(ctx, t, dir, true)
	return n, info, err
}

// existingDir checks that a resolved directory is there, as a directory.
func existingDir(n node, dir string) error {
	switch {
	case n.stat == nil:
		return notFound("the directory %s does not exist", dir)
	case !n.stat.IsDir():
		return conflict("%s is not a directory", dir)
	}
	return nil
}

// statTo answers a change with what is now at p.
func (h *Handler) statTo(ctx context.Context, w http.ResponseWriter, t Target, p string, code int) error {
	st, err := h.statPath(ctx, t, p)
	if err != nil {
		return driverError(err, t)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	return writeJSONBody(w, infoOf(st))
}

// discard removes a temporary file of a failed write, even when the request's context is over. A copy that
// broke off leaves its file owned by root (Docker gives the file its owner last), which the container's user
// cannot remove: an empty file of the user's replaces it first (an extraction replaces what is there).
func (h *Handler) discard(ctx context.Context, t Target, tmp string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	empty := &tar.Header{Name: path.Base(tmp), Mode: 0o600, ModTime: time.Now(), Typeflag: tar.TypeReg}
	// If either fails, the temporary name says what the file is.
	if err := h.copyTo(ctx, t, path.Dir(tmp), oneFile(empty, nil)); err == nil {
		_ = h.Driver.RemovePath(ctx, t.Container, tmp, false)
	}
}

// writeError explains a failed copy in: a full mount by its size.
func writeError(err error, t Target, m *Mount) error {
	switch {
	case dd.IsNoSpace(err) && m != nil:
		return insufficientStorage("%s is full: %s", m.Name, sizeOf(m.SizeBytes))
	case dd.IsNoSpace(err):
		return insufficientStorage("the root file system is full: %s", sizeOf(t.RootBytes))
	}
	return driverError(err, t)
}

// fileMode parses the mode parameter of a write: permission bits in octal, 0644 when absent.
func fileMode(s string) (fs.FileMode, error) {
	if s == "" {
		return 0o644, nil
	}
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil || n > 0o777 {
		return 0, badRequest("mode %q is not permission bits in octal, like 0644", s)
	}
	return fs.FileMode(n), nil
}

// tempName is a hidden name in the same directory that no other write picks.
func tempName(base string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand does not fail
	name := "." + base + ".dockside-" + hex.EncodeToString(b)
	if len(name) > 255 {
		name = ".dockside-upload-" + hex.EncodeToString(b)
	}
	return name
}

func sizeOf(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String() + "B"
}

// body is a request body being spooled, which tells afterwards whether it ended before its Content-Length
// or broke: then the client went away or cut it short.
type body struct {
	r    io.Reader
	size int64 // -1: unknown

	mu    sync.Mutex
	got   int64
	short bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got += int64(n)
	if err != nil && (!errors.Is(err, io.EOF) || b.got < b.size) {
		b.short = true
	}
	return n, err //nolint:wrapcheck // a Reader's io.EOF must stay as it is
}

// cutShort reports whether the body ended early, and after how many bytes.
func (b *body) cutShort() (bool, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.short, b.got
}

// oneFile streams an archive of one file whose content is r.
func oneFile(hdr *tar.Header, r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(hdr)
		if err == nil && hdr.Size > 0 {
			_, err = io.CopyN(tw, r, hdr.Size)
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// dirArchive is an archive of the nested directories names[0]/names[1]/...
func dirArchive(names []string) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		for i := range names {
			name := strings.Join(names[:i+1], "/") + "/"
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, ModTime: time.Now(), Typeflag: tar.TypeDir}); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(tw.Close())
	}()
	return pr
}
