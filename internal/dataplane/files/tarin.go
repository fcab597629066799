package files

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// tarIn extracts the request's tar stream into the directory p, entry by entry as it comes: files,
// directories and links only, named inside p, owned by the container's user. It is not atomic: an archive
// that breaks off or is refused part way leaves the entries before that point (docs/design/dataplane-files.md).
func (h *Handler) tarIn(ctx context.Context, w http.ResponseWriter, r *http.Request, t Target, p string) error {
	dir, _, err := h.changeIn(ctx, t, p)
	if err != nil {
		return err
	}
	m, err := t.writable(dir.path)
	if err != nil {
		return err
	}
	if err := existingDir(dir, p); err != nil {
		return err
	}
	// Refused before the body is read, in plain HTTP (an upgraded call switches protocols at its first read).
	if err := tooLarge(r, t, m, "the archive", 2); err != nil {
		return err
	}
	// Checked while spooled, so that a refused entry stops the archive before anything reaches the container.
	// An archive may be twice the mount's size: its headers and padding take room the files do not.
	archive := checkedTar(r.Body)
	defer archive.Close() // a spool that stops early (too large) would leave its writer blocked
	checked := *r
	checked.Body = archive
	data, err := h.spoolBody(&checked, t, m, "the archive", 2)
	if err != nil {
		return err
	}
	defer data.Close()
	if err := h.copyTo(ctx, t, dir.path, data); err != nil {
		switch {
		case dd.IsNoSpace(err) && m != nil:
			return insufficientStorage("%s is full: %s; the entries before that point were extracted", m.Name, sizeOf(m.SizeBytes))
		case dd.IsUncertain(err):
			// What Docker refuses mid-archive it answers as a server error, which the driver cannot tell from
			// a broken call; its one refusal of checked entries is a directory where a non-directory is.
			return conflict("the archive could not be extracted: a directory of the archive is a file or a link in %s (Docker never replaces one), or Docker failed; the entries before that point were extracted", p)
		}
		return driverError(err, t)
	}
	return h.statTo(ctx, w, t, dir.path, http.StatusOK)
}

// checkedTar passes a tar stream on, entry by entry, and breaks it with a *fileswire.StatusError at the first
// entry files refuses or where the stream breaks. It ends only where the body does, so that the call is
// answered after the client's end of the upload, not at the archive's end marker.
func checkedTar(in io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		err := copyChecked(tar.NewReader(in), tar.NewWriter(pw))
		if err == nil {
			err = afterTheEnd(in)
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// trailingMax is how much may follow an archive's end marker: tar pads an archive to its record size,
// 10 KiB by default, with zeros that the tar reader never asks for.
const trailingMax = 64 << 10

// afterTheEnd reads what follows the archive's end marker up to the body's end, refusing more than padding.
func afterTheEnd(in io.Reader) error {
	n, err := io.Copy(io.Discard, io.LimitReader(in, trailingMax+1))
	switch {
	case err != nil:
		return badRequest("what follows the archive's end could not be read: %v; nothing was extracted", err)
	case n > trailingMax:
		return badRequest("the archive is followed by more than %s of data that is not part of it; nothing was extracted", sizeOf(trailingMax))
	}
	return nil
}

// copyChecked copies the entries that checkEntry admits, and before each one declares as directories its
// parents that the archive has not declared yet. Docker's extraction replaces whatever is at a declared
// directory's path that is not a directory (a symlink the container made, say) but follows an undeclared
// parent, link or not: through a link to /etc it would write into the container's read-only root, which is
// writable from the daemon's side.
func copyChecked(tr *tar.Reader, tw *tar.Writer) error {
	dirs := &seenDirs{kinds: map[string]bool{".": true}}
	for {
		hdr, err := tr.Next()
		switch {
		case errors.Is(err, io.EOF):
			return tw.Close() //nolint:wrapcheck // into a pipe: its reader sees the error as the stream's
		case err != nil:
			return badRequest("the archive is not a valid tar stream or broke off: %v", err)
		case hdr.Typeflag == tar.TypeXGlobalHeader:
			continue
		}
		if err := checkEntry(hdr); err != nil {
			return err
		}
		name := path.Clean(hdr.Name)
		if name == "." {
			continue // the directory itself, whose owner and mode stay as they are
		}
		if err := declareParents(tw, dirs, name, hdr); err != nil {
			return err
		}
		if err := dirs.note(name, hdr.Typeflag == tar.TypeDir); err != nil {
			return err
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return badRequest("entry %q: %v", hdr.Name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return badRequest("the archive broke off in %q: %v", hdr.Name, err)
		}
	}
}

// declareParents writes a directory entry for each parent of name, top down, not yet declared as one.
func declareParents(tw *tar.Writer, dirs *seenDirs, name string, like *tar.Header) error {
	var parents []string
	for p := path.Dir(name); !dirs.kinds[p]; p = path.Dir(p) {
		parents = append([]string{p}, parents...)
	}
	for _, p := range parents {
		if err := tw.WriteHeader(&tar.Header{Name: p + "/", Mode: 0o755, ModTime: like.ModTime, Typeflag: tar.TypeDir}); err != nil {
			return badRequest("entry %q: %v", p, err)
		}
		if err := dirs.note(p, true); err != nil {
			return err
		}
	}
	return nil
}

// seenDirs is what a tar stream in has declared so far, by name: a directory or not. Its names are bounded
// (maxTarDirNames bytes), so that an archive of many directories cannot make the agent hold them all.
type seenDirs struct {
	kinds map[string]bool
	bytes int
}

func (s *seenDirs) note(name string, dir bool) error {
	if _, ok := s.kinds[name]; !ok {
		s.bytes += len(name)
		if s.bytes > maxTarDirNames {
			return badRequest("the archive names more than %s of paths, more than files keeps track of in one archive: send it in parts; the entries before that point were extracted", sizeOf(maxTarDirNames))
		}
	}
	s.kinds[name] = dir
	return nil
}

// checkEntry admits files, directories and links whose names stay inside the directory; a hard link must
// also point inside it. Symlinks may point anywhere: they are resolved in the container's root.
func checkEntry(hdr *tar.Header) error {
	if err := insideName(hdr.Name); err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
		return nil
	case tar.TypeSymlink:
		if len(hdr.Linkname) > maxPath {
			return badRequest("entry %q is a link to a name longer than %d bytes, which files does not take", hdr.Name, maxPath)
		}
		return nil
	case tar.TypeLink:
		return insideName(hdr.Linkname)
	}
	return badRequest("entry %q is not a file, directory or link (type %q): files takes no devices or pipes", hdr.Name, string(hdr.Typeflag))
}

// insideName admits a relative name that stays inside the directory, at most maxPath bytes and maxDepth
// directories deep: a name cut short for the message when it is not.
func insideName(name string) error {
	if len(name) > maxPath {
		return badRequest("entry %q... is a name longer than %d bytes, which files does not take", name[:64], maxPath)
	}
	clean := path.Clean(name)
	if path.IsAbs(name) || clean == ".." || strings.HasPrefix(clean, "../") {
		return badRequest("entry %q is not inside the directory: names must be relative, without '..' above it", name)
	}
	if depthOf(clean) > maxDepth {
		return tooDeep(fmt.Sprintf("entry %q...", name[:min(len(name), 64)]))
	}
	return nil
}
