package files

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
)

// Docker 20.10 holds a container's lock for the whole of an archive call, the stream included: while a copy
// into or out of the primary runs, every exec, inspect and copy of it waits. So bodies never stream between
// a client and the daemon at the client's pace: they are spooled to a file of the agent's node first, and the
// daemon's part of the copy runs at disk speed. The file is unlinked at once, so nothing is left on disk
// whatever happens to the agent (docs/design/dataplane-files.md).

// errTooLarge is a body past the spool's limit.
var errTooLarge = errors.New("larger than the limit")

// spooled is a body on the node's disk, rewound; Close frees it.
type spooled struct {
	*os.File
	size int64
}

// spool copies r into an unlinked temporary file of dir ("" for the system's), refusing more than limit bytes
// (0: no limit) with errTooLarge.
func spool(dir string, r io.Reader, limit int64) (*spooled, error) {
	f, err := os.CreateTemp(dir, "dockside-files-*")
	if err != nil {
		return nil, fmt.Errorf("making a spool file: %w", err)
	}
	_ = os.Remove(f.Name()) // the open file lives on without a name
	src := r
	if limit > 0 {
		src = io.LimitReader(r, limit+1)
	}
	n, err := io.Copy(f, src)
	if err == nil && limit > 0 && n > limit {
		err = errTooLarge
	}
	if err == nil {
		if _, err = f.Seek(0, io.SeekStart); err != nil {
			err = fmt.Errorf("rewinding the spool file: %w", err)
		}
	}
	if err != nil {
		f.Close()
		return nil, err //nolint:wrapcheck // the body's own error: the caller tells the client's from ours
	}
	return &spooled{File: f, size: n}, nil
}

// sizedTar passes a tar stream on as it is, and breaks it with errTooLarge as soon as the sizes its headers
// announce add up to more than limit, before the entry that passes it is read: a directory's archive is
// bounded by what its files hold, whatever its headers take.
func sizedTar(in io.Reader, limit int64) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tr := tar.NewReader(io.TeeReader(in, pw))
		var total int64
		for {
			hdr, err := tr.Next()
			switch {
			case errors.Is(err, io.EOF):
				_, err = io.Copy(pw, in) // the padding after the end marker
				pw.CloseWithError(err)
				return
			case err != nil:
				pw.CloseWithError(fmt.Errorf("reading the archive: %w", err))
				return
			}
			if total += hdr.Size; total > limit {
				pw.CloseWithError(errTooLarge)
				return
			}
		}
	}()
	return pr
}
