package owndockerd

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReapLeftovers stops and removes the own daemons of runs that are gone (their owner process is dead), leaving
// those of a run still going alone; logf tells what it removes.
func ReapLeftovers(logf func(format string, args ...any)) error {
	dirs, err := filepath.Glob(filepath.Join("/tmp", prefix+"*"))
	if err != nil {
		return fmt.Errorf("finding leftover daemons: %w", err)
	}
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // not one of ours, or not yet written
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(owner))); err == nil && processAlive(pid) {
			continue
		}
		logf("removing the own Docker daemon left by a dead run in %s\n", dir)
		stopVerifiedPid(filepath.Join(dir, "dockerd.pid"), dir)
		// Containers of a daemon that was killed run on in their shims; a daemon started once more on the
		// dirs stops them (no live-restore) and removes them and their networks' bridges.
		if driver, err := os.ReadFile(filepath.Join(dir, "driver")); err == nil {
			d := &Daemon{Name: strings.TrimPrefix(filepath.Base(dir), prefix), Dir: dir, Driver: string(driver)}
			if err := d.launch(); err != nil {
				logf("the leftover daemon in %s did not start again: %v\n", dir, err)
			}
			d.clear()
			d.Stop()
		}
		stopVerifiedPid(filepath.Join(dir, "exec/containerd/containerd.pid"), dir)
		if err := removeDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// stopVerifiedPid stops the process whose pid the file holds, SIGTERM then SIGKILL, but only when its command
// line names dir: a pid file outliving its process may name someone else's by now.
func stopVerifiedPid(pidFile, dir string) {
	pid := verifiedPid(pidFile, dir)
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(stopGrace); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if !processAlive(pid) {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// verifiedPid is the pid the file holds when that process runs with dir in its command line, else 0.
func verifiedPid(pidFile, dir string) int {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), dir) {
		return 0 // gone, a zombie (empty command line), or someone else's by now
	}
	return pid
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeDir unmounts whatever is still mounted under dir (deepest first, lazily if busy) and removes it.
func removeDir(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, 0); err != nil {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				return fmt.Errorf("unmounting %s: %w", m, err)
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the leftover daemon's folder: %w", err)
	}
	return nil
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	var found []string
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		fields := strings.Fields(scan.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	sort.Slice(found, func(i, j int) bool { return len(found[i]) > len(found[j]) })
	if err := scan.Err(); err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	return found, nil
}
