package dockerdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
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
// process of the host is never hit. Once the agent is known to see the daemon's processes, the session is
// found in /proc, which costs no call to the daemon (whose `top` runs ps); until then, the daemon lists them.
func (d *Docker) killSession(ctx context.Context, id, name string, leader int) (int, error) {
	var in map[int]bool
	if d.seesHostPIDs.Load() {
		procs, err := hostProcesses()
		if err != nil {
			return 0, errorf(KindUncertain, PhaseExec, name, "listing the host's processes: %v", err)
		}
		in = sessionOf(procs, leader)
	} else {
		procs, err := d.containerProcesses(ctx, id, name)
		if err != nil {
			return 0, err
		}
		in = sessionOf(procs, leader)
		for p := range procs {
			// One is enough: the agent sees all of the daemon's processes or none. Ask each until one answers,
			// since any may have ended since the listing (the container's first process lives on).
			if inContainer(p, id) == nil {
				d.seesHostPIDs.Store(true)
				break
			}
		}
	}
	return d.killAll(in, id, name)
}

// proc is what the session search needs of a process.
type proc struct{ ppid, sid int }

// containerProcesses lists the container's processes by host PID, as the daemon reports them.
func (d *Docker) containerProcesses(ctx context.Context, id, name string) (map[int]proc, error) {
	top, err := d.cli.ContainerTop(ctx, id, []string{"-o", "pid,ppid,sid"})
	if err != nil {
		return nil, d.classify(err, PhaseExec, name)
	}
	pid, ppid, sid := slices.Index(top.Titles, "PID"), slices.Index(top.Titles, "PPID"), slices.Index(top.Titles, "SID")
	if pid < 0 || ppid < 0 || sid < 0 {
		return nil, NewError(KindUncertain, PhaseExec, name, "the daemon's process list has no PID, PPID or SID column")
	}
	procs := map[int]proc{}
	for _, p := range top.Processes {
		if len(p) <= max(pid, ppid, sid) {
			continue
		}
		child, _ := strconv.Atoi(p[pid])
		parent, _ := strconv.Atoi(p[ppid])
		session, _ := strconv.Atoi(p[sid])
		procs[child] = proc{ppid: parent, sid: session}
	}
	return procs, nil
}

// hostProcesses reads every process of the agent's /proc: its parent and session, from /proc/<pid>/stat.
func hostProcesses() (map[int]proc, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", procRoot, err)
	}
	procs := make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
		if err != nil {
			continue // gone since the listing
		}
		// pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses, so read after the last ')'.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		sid, _ := strconv.Atoi(fields[3])
		procs[pid] = proc{ppid: ppid, sid: sid}
	}
	return procs, nil
}

// cgroupProcesses lists the live processes of container id in the agent's /proc by host PID: those whose
// cgroup names the container, zombies left out (docker top's view, without asking the daemon).
func cgroupProcesses(id string) (map[string]bool, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", procRoot, err)
	}
	live := map[string]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || inContainer(pid, id) != nil {
			continue // not a process, gone since the listing, or another container's
		}
		stat, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
		if err != nil {
			continue
		}
		// pid (comm) state ...: comm may hold spaces and parentheses, so read after the last ')'.
		if fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(fields) > 0 && fields[0] != "Z" {
			live[e.Name()] = true
		}
	}
	return live, nil
}

// sessionOf is the leader, the processes of its session and their descendants.
func sessionOf(procs map[int]proc, leader int) map[int]bool {
	in := map[int]bool{}
	for changed := true; changed; { // descendants: parents may be listed after their children
		changed = false
		for pid, p := range procs {
			if !in[pid] && (pid == leader || p.sid == leader || in[p.ppid]) {
				in[pid], changed = true, true
			}
		}
	}
	return in
}

// killAll SIGKILLs each process of in that is in the container's cgroup, and says how many.
func (d *Docker) killAll(in map[int]bool, id, name string) (int, error) {
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
	if unseen > 0 && unseen == len(in) && !d.seesHostPIDs.Load() {
		// The daemon lists them and none is in our /proc: the agent does not see the daemon's host processes.
		// (Once it is known to see them, an unseen one had just ended, as a killed command's processes do.)
		return 0, errorf(KindUncertain, PhaseExec, name, "%d processes of the exec are left running: the agent does not share the daemon's host PID namespace", unseen)
	}
	if len(errs) > 0 {
		return killed, errorf(KindUncertain, PhaseExec, name, "could not end %d processes of the exec (the agent needs CAP_KILL and the daemon's host PID namespace): %v", len(errs), errors.Join(errs...))
	}
	return killed, nil
}

var errNotInContainer = errors.New("the process is not in the container's cgroup")

// inContainer is nil when host PID pid is in the cgroup of container id; a process that is gone is
// ErrNotExist or errNotInContainer (its PID went to another process of the host).
func inContainer(pid int, id string) error {
	cgroup, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", procRoot, pid))
	if err != nil {
		return fmt.Errorf("reading the cgroup of process %d: %w", pid, err)
	}
	if !bytes.Contains(cgroup, []byte(id)) {
		return errNotInContainer
	}
	return nil
}

// killInContainer SIGKILLs host PID pid if it is in the cgroup of container id; a process that is gone is
// ESRCH, ErrNotExist or errNotInContainer.
func killInContainer(pid int, id string) error {
	if err := inContainer(pid, id); err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing process %d: %w", pid, err)
	}
	return nil
}
