package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// recordChildren writes this process and its direct children (etcd, kube-apiserver) to the pid file, so that
// `dockside-dev stop` or the next run can end them even if this process is killed without a chance to clean up.
func recordChildren(pidFile string) error {
	pids := append([]int{os.Getpid()}, childrenOf(os.Getpid())...)
	var b strings.Builder
	for _, pid := range pids {
		fmt.Fprintf(&b, "%d %s\n", pid, startTime(pid))
	}
	if err := os.MkdirAll(filepath.Dir(pidFile), 0o700); err != nil {
		return fmt.Errorf("recording the processes in %s: %w", pidFile, err)
	}
	if err := os.WriteFile(pidFile, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("recording the processes in %s: %w", pidFile, err)
	}
	return nil
}

// stopRecorded ends the processes in the pid file: the run first (so that it stops the agent and control plane
// in order), then whatever is left after the grace period. A pid whose start time changed belongs to another
// process by now and is left alone.
func stopRecorded(pidFile string, grace time.Duration) error {
	data, err := os.ReadFile(pidFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the pid file: %w", err)
	}
	var alive []int
	runAlive := false // the first line is the run that wrote the file
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var pid int
		var started string
		if _, err := fmt.Sscan(line, &pid, &started); err == nil && pid != os.Getpid() && startTime(pid) == started {
			alive = append(alive, pid)
			runAlive = runAlive || i == 0
		}
	}
	if runAlive {
		// The run stops its agent before the control plane, so the agent can still hand its Lease back.
		_ = syscall.Kill(alive[0], syscall.SIGTERM)
		waitExit(alive[:1], grace)
	}
	for _, pid := range alive {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	waitExit(alive, grace)
	for _, pid := range alive {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// The run removes the file itself when it stops in order.
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the pid file: %w", err)
	}
	return nil
}

// waitExit waits until none of the processes runs, or the grace period is over.
func waitExit(pids []int, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && anyAlive(pids) {
		time.Sleep(100 * time.Millisecond)
	}
}

// anyAlive tells whether any of the processes still runs; a zombie has exited and only waits to be reaped.
func anyAlive(pids []int) bool {
	for _, pid := range pids {
		if fields := statFields(pid); len(fields) > 0 && fields[0] != "Z" {
			return true
		}
	}
	return false
}

// childrenOf lists the direct children of pid from /proc.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var children []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fields := statFields(child); len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			children = append(children, child)
		}
	}
	return children
}

// startTime is the process's start time in clock ticks since boot, which tells a reused pid apart.
func startTime(pid int) string {
	if fields := statFields(pid); len(fields) > 19 {
		return fields[19]
	}
	return "gone"
}

// statFields returns the fields of /proc/<pid>/stat after the command name (state is fields[0], ppid fields[1]).
func statFields(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	if i := bytes.LastIndexByte(data, ')'); i >= 0 {
		return strings.Fields(string(data[i+1:]))
	}
	return nil
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
