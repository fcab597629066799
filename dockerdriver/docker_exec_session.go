package dockerdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// procRoot is where the agent sees the host's processes. It signals them there because Docker has no call
// that signals one process of a container: the agent must share the daemon's host and PID namespace, as
// `make run`, the systemd unit and the end-to-end tests do (docs/design/dataplane.md, "Processes end with
// the exec").
const procRoot = "/proc"

// killSession SIGKILLs the container's processes in the session led by host PID leader, and their
// descendants (a child that called setsid itself is still found while its parent lives), and says how many.
// Each is checked to be in the container's cgroup right before it is signalled, so a PID reused by another
// process of the host is never hit.
func (d *Docker) killSession(ctx context.Context, id, name string, leader int) (int, error) {
	top, err := d.cli.ContainerTop(ctx, id, []string{"-o", "pid,ppid,sid"})
	if err != nil {
		return 0, d.classify(err, PhaseExec, name)
	}
	pid, ppid, sid := slices.Index(top.Titles, "PID"), slices.Index(top.Titles, "PPID"), slices.Index(top.Titles, "SID")
	if pid < 0 || ppid < 0 || sid < 0 {
		return 0, NewError(KindUncertain, PhaseExec, name, "the daemon's process list has no PID, PPID or SID column")
	}
	in := map[int]bool{}
	for changed := true; changed; { // descendants: parents may be listed after their children
		changed = false
		for _, p := range top.Processes {
			if len(p) <= max(pid, ppid, sid) {
				continue
			}
			child, _ := strconv.Atoi(p[pid])
			parent, _ := strconv.Atoi(p[ppid])
			session, _ := strconv.Atoi(p[sid])
			if !in[child] && (child == leader || session == leader || in[parent]) {
				in[child], changed = true, true
			}
		}
	}
	killed, unseen, errs := 0, 0, []error(nil)
	for p := range in {
		switch err := killInContainer(p, id); {
		case err == nil:
			killed++
		case errors.Is(err, os.ErrNotExist):
			unseen++
		case !errors.Is(err, syscall.ESRCH) && !errors.Is(err, errNotInContainer):
			errs = append(errs, err)
		}
	}
	if unseen > 0 && unseen == len(in) {
		// The daemon lists them and none is in our /proc: the agent does not see the daemon's host processes.
		return 0, errorf(KindUncertain, PhaseExec, name, "%d processes of the exec are left running: the agent does not share the daemon's host PID namespace", unseen)
	}
	if len(errs) > 0 {
		return killed, errorf(KindUncertain, PhaseExec, name, "could not end %d processes of the exec (the agent must share the daemon's host PID namespace): %v", len(errs), errors.Join(errs...))
	}
	return killed, nil
}

var errNotInContainer = errors.New("the process is not in the container's cgroup")

// killInContainer SIGKILLs host PID pid if it is in the cgroup of container id; a process that is gone is
// ESRCH, ErrNotExist or errNotInContainer.
func killInContainer(pid int, id string) error {
	cgroup, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", procRoot, pid))
	if err != nil {
		return fmt.Errorf("reading the cgroup of process %d: %w", pid, err)
	}
	if !bytes.Contains(cgroup, []byte(id)) {
		return errNotInContainer // it exited and its PID went to another process of the host
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing process %d: %w", pid, err)
	}
	return nil
}
