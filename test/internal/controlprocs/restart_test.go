package controlprocs

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestKillThenStartRunsTheSameCommandAgain(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	cmd.Dir, cmd.Env = dir, []string{"MARK=first"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reaped as the control plane reaps its processes
	execDone(t, cmd.Process.Pid)
	stopped, err := Kill(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !exited(cmd.Process.Pid) {
		t.Fatal("Kill returned before the process exited")
	}
	p, err := stopped.Start(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if args, want := execDone(t, p.Pid()), []string{"sleep", "60"}; !slices.Equal(args, want) {
		t.Errorf("started again as %q, want %q", args, want)
	}
	environ, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid()), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	if string(environ) != "MARK=first\x00" {
		t.Errorf("environment %q, want the first run's", environ)
	}
	if cwd, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.Pid()), "cwd")); cwd != dir {
		t.Errorf("working folder %q, want %q", cwd, dir)
	}
	if p.Exited() {
		t.Error("Exited while the process runs")
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if !exited(p.Pid()) || !p.Exited() {
		t.Error("Stop returned before the process exited")
	}
}

// execDone waits until pid's exec has finished setting up its arguments and returns them: exec.Cmd.Start
// returns once the new program is committed to, a moment before the kernel has filled /proc/PID/cmdline.
func execDone(t *testing.T, pid int) []string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		args, err := cmdline(pid)
		if err != nil {
			t.Fatal(err)
		}
		if args[0] != "" || time.Now().After(deadline) {
			return args
		}
	}
}
