package files

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// read streams a regular file's bytes out of the single-entry archive the daemon sends.
func (h *Handler) read(ctx context.Context, w http.ResponseWriter, t Target, p string) error {
	n, err := h.readable(ctx, t, p, true)
	if err != nil {
		return err
	}
	if n.stat.IsDir() {
		return badRequest("%s is a directory: list it with op=list or copy it with op=tar", p)
	}
	if !n.stat.Mode.IsRegular() {
		return notRegular(p, n.stat.Mode)
	}
	if m, root := h.volumeOf(ctx, t, n.path); root != nil {
		defer root.Close()
		return readHost(w, root, m, n.path)
	}
	// Spooled on the node's disk: a file larger than where it lies can hold is sparse, and copied out it
	// would take its whole length there.
	limit, where := h.spoolBound(t, n.path)
	if n.stat.Size > limit {
		return sparse(p, n.stat.Size, limit, where)
	}
	rc, err := h.copyFrom(ctx, t, n.path)
	if err != nil {
		return driverError(err, t)
	}
	tr := tar.NewReader(rc)
	hdr, err := tr.Next()
	if err != nil {
		rc.Close()
		return internal("the archive of %s broke off", p)
	}
	if hdr.Typeflag != tar.TypeReg {
		rc.Close()
		return notRegular(p, hdr.FileInfo().Mode()) // it changed since it was resolved
	}
	if hdr.Size > limit {
		rc.Close()
		return sparse(p, hdr.Size, limit, where) // it grew since it was resolved
	}
	return h.serveSpooled(w, rc, tr, p, "application/octet-stream", hdr.Size, sparse(p, hdr.Size, limit, where))
}

// serveSpooled spools what the daemon sends (read from r, then rc closed, which releases the container), at
// most limit bytes (more is answered with tooLarge), and then serves it to the client at the client's pace,
// with its Content-Length.
func (h *Handler) serveSpooled(w http.ResponseWriter, rc io.Closer, r io.Reader, p, contentType string, limit int64, tooLarge error) error {
	data, err := spool(h.SpoolDir, r, limit)
	rc.Close()
	if errors.Is(err, errTooLarge) {
		return tooLarge
	}
	if err != nil {
		return internal("the copy of %s out of the container failed: %v", p, err)
	}
	defer data.Close()
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.FormatInt(data.size, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, data) // a break now cuts the body short of its Content-Length, which the client sees
	return nil
}

// stat reports the path itself: a symlink as a symlink, with its target resolved in the container.
func (h *Handler) stat(ctx context.Context, w http.ResponseWriter, t Target, p string) error {
	n, err := h.readable(ctx, t, p, false)
	if err != nil {
		return err
	}
	info := infoOf(*n.stat)
	if p == "/" {
		info.Name = "/"
	}
	return writeJSON(w, info)
}

// list reports a directory's entries, sorted by name, from the headers of its archive, at most
// maxListEntries. The daemon has no listing call, so this reads past the entries' contents (streamed, not
// kept): its cost grows with what the directory holds.
func (h *Handler) list(ctx context.Context, w http.ResponseWriter, t Target, p string) error {
	n, err := h.readable(ctx, t, p, true)
	if err != nil {
		return err
	}
	if !n.stat.IsDir() {
		return badRequest("%s is not a directory", p)
	}
	if m, root := h.volumeOf(ctx, t, n.path); root != nil {
		defer root.Close()
		return listHost(w, root, m, n.path)
	}
	rc, err := h.copyFrom(ctx, t, dirContents(n.path))
	if err != nil {
		return driverError(err, t)
	}
	defer rc.Close()
	items := []FileInfo{}
	limit, where := h.spoolBound(t, n.path)
	var total int64 // what the files announce: one that passes the bound is refused before it is read past
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return internal("the archive of %s broke off", p)
		}
		if total += hdr.Size; total > limit {
			return tooLargeAnswer("the files of %s are more than %s holds (one is sparse, or they grew): list its subdirectories", p, where)
		}
		name := strings.TrimSuffix(path.Clean(hdr.Name), "/")
		if name == "." || strings.Contains(name, "/") {
			continue
		}
		if len(items) == maxListEntries {
			return tooManyEntries(p)
		}
		items = append(items, infoOfHeader(name, hdr))
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return writeJSON(w, items)
}

// tarOut streams a directory as a tar archive whose entries are relative to it ("./", "./file", ...).
func (h *Handler) tarOut(ctx context.Context, w http.ResponseWriter, t Target, p string) error {
	n, err := h.readable(ctx, t, p, true)
	if err != nil {
		return err
	}
	if !n.stat.IsDir() {
		return badRequest("%s is not a directory: read a file without op", p)
	}
	if within(dsv1alpha1.SecretFilesDir, n.path) {
		return forbidden("an archive of %s would hold %s, the Sandbox's secret files", n.path, dsv1alpha1.SecretFilesDir)
	}
	rc, err := h.copyFrom(ctx, t, dirContents(n.path))
	if err != nil {
		return driverError(err, t)
	}
	// Its files cannot hold more than where they lie, whatever their headers take.
	limit, where := h.spoolBound(t, n.path)
	sized := sizedTar(rc, limit)
	defer sized.Close() // a spool that stops early would leave the reader of rc blocked
	return h.serveSpooled(w, rc, sized, p, "application/x-tar", 0, tooLargeAnswer(
		"the files of %s are more than %s holds (one is sparse, or they grew): files does not copy them out through the node's disk; copy its parts", p, where))
}

// readable resolves p for a read and checks that it exists where files can see it.
func (h *Handler) readable(ctx context.Context, t Target, p string, followLast bool) (node, error) {
	n, err := h.resolve(ctx, t, p, followLast)
	if err != nil {
		return node{}, err
	}
	if n.stat == nil {
		return node{}, notFound("%s does not exist", p)
	}
	return n, nil
}

// dirContents is the archive path of a directory's contents, whose entries the daemon names "./...".
func dirContents(dir string) string { return strings.TrimSuffix(dir, "/") + "/." }

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return writeJSONBody(w, v)
}

func writeJSONBody(w io.Writer, v any) error {
	_ = json.NewEncoder(w).Encode(v) // the client went away if this fails: there is no one to tell
	return nil
}
