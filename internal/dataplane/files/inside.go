package files

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// The container's own tmpfs mounts (scratch, /tmp) exist only in its mount namespace: the daemon's archive
// API reads and writes the image's directory under them instead. Files there are reached through commands of
// the image (sh, stat, readlink, tar) streamed as the container's user, the archive calls' counterparts; an
// image without them cannot serve its tmpfs mounts (docs/design/dataplane-files.md).

// statPath is StatPath, inside the container for a path under one of its tmpfs mounts.
func (h *Handler) statPath(ctx context.Context, t Target, p string) (dd.PathStat, error) {
	if !t.inTmpfs(p) {
		return h.Driver.StatPath(ctx, t.Container, p) //nolint:wrapcheck // classified by the driver, turned into a Status by the caller
	}
	var out bytes.Buffer
	// %f is the raw mode in hex, which busybox and coreutils print alike; a link's target follows on a second
	// line, resolved in the container, or as written when it leads nowhere (readlink -f fails then).
	script := `stat -c '%f %s %Y' -- "$1" && if [ -L "$1" ]; then readlink -f -- "$1" || readlink -- "$1"; fi`
	if err := h.inside(ctx, t, nil, &out, "sh", "-c", script, "sh", p); err != nil {
		return dd.PathStat{}, err
	}
	return parseStat(p, out.String())
}

// copyFrom is CopyFrom (a tar archive of p, or of a directory's contents for "dir/."), inside the container
// for a path under one of its tmpfs mounts.
func (h *Handler) copyFrom(ctx context.Context, t Target, p string) (io.ReadCloser, error) {
	if !t.inTmpfs(strings.TrimSuffix(p, "/.")) {
		return h.Driver.CopyFrom(ctx, t.Container, p) //nolint:wrapcheck // classified by the driver
	}
	dir, base := path.Dir(p), path.Base(p)
	if strings.HasSuffix(p, "/.") {
		dir, base = strings.TrimSuffix(p, "/."), "."
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(h.inside(ctx, t, nil, pw, "tar", "-c", "-f", "-", "-C", dir, "--", base)) }()
	return pr, nil
}

// copyTo is CopyToAsUser, inside the container for a directory under one of its tmpfs mounts: its tar
// extracts as the container's user, who owns what it makes.
func (h *Handler) copyTo(ctx context.Context, t Target, dir string, archive io.Reader) error {
	if !t.inTmpfs(dir) {
		return h.Driver.CopyToAsUser(ctx, t.Container, dir, archive) //nolint:wrapcheck // classified by the driver
	}
	return h.inside(ctx, t, archive, io.Discard, "tar", "-x", "-f", "-", "-C", dir)
}

// inside runs a command of the image as the container's user, streaming stdin and stdout, and classifies
// how it ended the way the driver does: NotFound, NoSpace or a Conflict carrying its first line of stderr.
func (h *Handler) inside(ctx context.Context, t Target, stdin io.Reader, stdout io.Writer, cmd ...string) error {
	var stderr bytes.Buffer
	res, err := h.Driver.StreamExec(ctx, t.Container, dd.StreamExecRequest{Command: cmd, Stdin: stdin, Stdout: stdout, Stderr: &limited{w: &stderr, n: 4 << 10}})
	if err != nil {
		return err //nolint:wrapcheck // classified by the driver, turned into a Status by the caller
	}
	msg := strings.TrimSpace(stderr.String())
	line, _, _ := strings.Cut(msg, "\n")
	switch {
	case res.ExitCode == 0:
		return nil
	case res.ExitCode == 126 || res.ExitCode == 127:
		return dd.NewError(dd.KindInvalidSpec, dd.PhaseExec, t.Container, fmt.Sprintf("the image has no %s, which files under its tmpfs mounts need", cmd[0]))
	case strings.Contains(msg, "No space left on device"):
		return dd.NewError(dd.KindNoSpace, dd.PhaseExec, t.Container, "the file system is full")
	case strings.Contains(msg, "No such file or directory"):
		return dd.NewError(dd.KindNotFound, dd.PhaseExec, t.Container, line)
	case line == "":
		line = fmt.Sprintf("%s exited with %d", cmd[0], res.ExitCode)
	}
	return dd.NewError(dd.KindConflict, dd.PhaseExec, t.Container, line)
}

// parseStat reads what the stat script printed of p: "MODE SIZE MTIME" (mode in hex, as stat's %f), and a
// link's target on the next line, made absolute from p's directory when it is relative.
func parseStat(p, out string) (dd.PathStat, error) {
	lines := strings.SplitN(strings.TrimRight(out, "\n"), "\n", 2)
	fields := strings.Fields(lines[0])
	bad := func() (dd.PathStat, error) {
		return dd.PathStat{}, dd.NewError(dd.KindUncertain, dd.PhaseExec, "", "stat printed "+strconv.Quote(lines[0]))
	}
	if len(fields) != 3 {
		return bad()
	}
	raw, err1 := strconv.ParseUint(fields[0], 16, 32)
	size, err2 := strconv.ParseInt(fields[1], 10, 64)
	mtime, err3 := strconv.ParseInt(fields[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return bad()
	}
	st := dd.PathStat{Name: path.Base(p), Size: size, Mode: unixMode(uint32(raw)), Mtime: time.Unix(mtime, 0)}
	if st.Mode&fs.ModeSymlink != 0 && len(lines) == 2 {
		st.LinkTarget = strings.TrimSpace(lines[1])
		if !path.IsAbs(st.LinkTarget) {
			st.LinkTarget = path.Join(path.Dir(p), st.LinkTarget)
		}
	}
	return st, nil
}

// unixMode turns a st_mode into an fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	return mode
}

// limited keeps the first n bytes written to it and drops the rest, so that a chatty command's stderr
// costs no more than n.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		_, _ = l.w.Write(p[:k]) // a bytes.Buffer
	}
	return len(p), nil
}
