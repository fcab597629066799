package dockerdriver

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
)

// PathCommandTimeout bounds the mv and rm that RenamePath and RemovePath run: rm -r of a full workspace of
// small files is the longest of them.
const PathCommandTimeout = 5 * time.Minute

// StatPath asks the archive API about p, which works on a paused container and in any image.
func (d *Docker) StatPath(ctx context.Context, name, p string) (PathStat, error) {
	info, err := d.existing(ctx, name, PhaseCopy)
	if err != nil {
		return PathStat{}, err
	}
	st, err := d.cli.ContainerStatPath(ctx, info.ID, p)
	if err != nil {
		return PathStat{}, d.classify(err, PhaseCopy, name)
	}
	return PathStat{Name: st.Name, Size: st.Size, Mode: st.Mode, Mtime: st.Mtime, LinkTarget: st.LinkTarget}, nil
}

// CopyToAsUser extracts the tar archive into dir, like CopyTo, with every entry owned by the container's
// user whatever owners the archive names (see ownedBy), so that what a user copies in is theirs to change.
func (d *Docker) CopyToAsUser(ctx context.Context, name, dir string, archive io.Reader) error {
	info, err := d.existing(ctx, name, PhaseCopy)
	if err != nil {
		return err
	}
	uid, gid, err := UserIDs(info.User)
	if err != nil {
		return errorf(KindInvalidSpec, PhaseCopy, name, "the container's user %q is not numeric", info.User)
	}
	owned := ownedBy(archive, uid, gid)
	defer owned.Close()
	err = d.cli.CopyToContainer(ctx, info.ID, dir, owned, container.CopyToContainerOptions{})
	return d.classify(err, PhaseCopy, name)
}

// RenamePath renames from to to in the running container, replacing a file at to and never moving into a
// directory there (mv -fT). The daemon has no call for it: the container's own mv runs as its user.
func (d *Docker) RenamePath(ctx context.Context, name, from, to string) error {
	return d.pathCommand(ctx, name, []string{"mv", "-fT", "--", from, to})
}

// RemovePath removes p (and what is under it, with recursive) in the running container; a missing p is not
// an error. The container's own rm runs as its user.
func (d *Docker) RemovePath(ctx context.Context, name, p string, recursive bool) error {
	flags := "-f"
	if recursive {
		flags = "-rf"
	}
	return d.pathCommand(ctx, name, []string{"rm", flags, "--", p})
}

// pathCommand runs a small command of the image as the container's user and turns how it ended into an
// error: a command the image lacks is InvalidSpec (it never will have it), one that failed is a Conflict
// carrying the first line it wrote to stderr, which is the container's text, not Docker's.
func (d *Docker) pathCommand(ctx context.Context, name string, cmd []string) error {
	res, err := d.Exec(ctx, name, ExecRequest{Command: cmd, Timeout: PathCommandTimeout, OutputLimit: 1 << 10, KeepOnTimeout: true})
	switch {
	case err != nil:
		return err
	case res.Reason != ExecCompleted:
		return NewError(KindUncertain, PhaseExec, name, cmd[0]+" did not end in time")
	}
	return pathCommandError(name, cmd[0], res)
}

// pathCommandError classifies how a path command ended; the shell convention of 126 and 127 is what runc
// reports for a command it cannot execute or find.
func pathCommandError(name, command string, res ExecResult) error {
	switch res.ExitCode {
	case 0:
		return nil
	case 126, 127:
		return errorf(KindInvalidSpec, PhaseExec, name, "the image has no %s, which this needs", command)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(res.Stderr)), "\n")
	if line == "" {
		line = fmt.Sprintf("%s exited with %d", command, res.ExitCode)
	}
	return NewError(KindConflict, PhaseExec, name, line)
}
