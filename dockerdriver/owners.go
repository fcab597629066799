package dockerdriver

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ownedBy streams the tar archive in with every entry owned by uid and gid, names dropped, and the set-uid
// and set-gid bits cleared. Docker's own copyUIDGID cannot do it: it looks the container's user up in the
// host's passwd database, where 65532:65532 is not. A broken or invalid archive ends the stream with its
// error, so the extraction fails rather than ending early as if complete.
func ownedBy(in io.Reader, uid, gid int) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(rewriteOwners(tar.NewReader(in), tar.NewWriter(pw), uid, gid)) }()
	return pr
}

func rewriteOwners(tr *tar.Reader, tw *tar.Writer, uid, gid int) error {
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if err := tw.Close(); err != nil {
				return fmt.Errorf("ending the archive: %w", err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = uid, gid, "", ""
		hdr.Mode &^= 0o6000 // c_ISUID | c_ISGID
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("writing the entry %s: %w", hdr.Name, err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("copying the entry %s: %w", hdr.Name, err)
		}
	}
}

// UserIDs parses a container's uid[:gid] (always numeric: see RunAs); a missing gid is the uid's.
func UserIDs(user string) (int, int, error) {
	u, g, hasGroup := strings.Cut(user, ":")
	if u == "" {
		u = "0"
	}
	if !hasGroup {
		g = u
	}
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, 0, fmt.Errorf("uid: %w", err)
	}
	gid, err := strconv.Atoi(g)
	if err != nil {
		return 0, 0, fmt.Errorf("gid: %w", err)
	}
	return uid, gid, nil
}
