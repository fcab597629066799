package dockerdriver

import (
	"archive/tar"
	"errors"
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
			return tw.Close()
		}
		if err != nil {
			return err
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = uid, gid, "", ""
		hdr.Mode &^= 0o6000 // c_ISUID | c_ISGID
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
}

// userIDs parses a container's uid[:gid] (always numeric: see RunAs); a missing gid is the uid's.
func userIDs(user string) (int, int, error) {
	u, g, hasGroup := strings.Cut(user, ":")
	if u == "" {
		u = "0"
	}
	if !hasGroup {
		g = u
	}
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, 0, err
	}
	gid, err := strconv.Atoi(g)
	return uid, gid, err
}
