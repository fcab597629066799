package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return cmd
}

func TestStopRecordedEndsRecordedProcesses(t *testing.T) {
	child := startSleep(t)
	pidFile := filepath.Join(t.TempDir(), "run.pids")
	if err := recordChildren(pidFile); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(pidFile)
	want := fmt.Sprintf("%d %s\n", child.Process.Pid, startTime(child.Process.Pid))
	if !strings.Contains(string(data), want) {
		t.Fatalf("pid file %q does not record the child as %q", data, want)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	if err := stopRecorded(pidFile, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded child still runs")
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Fatalf("pid file still there: %v", err)
	}
}

func TestStopRecordedLeavesReusedPidsAlone(t *testing.T) {
	child := startSleep(t)
	pidFile := filepath.Join(t.TempDir(), "run.pids")
	// The same pid with another start time stands for a process that ended and whose pid was handed out again.
	if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("%d 1\n", child.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := stopRecorded(pidFile, time.Second); err != nil {
		t.Fatal(err)
	}
	if fields := statFields(child.Process.Pid); len(fields) == 0 || fields[0] == "Z" {
		t.Fatal("a process whose start time did not match was stopped")
	}
}

func TestStopRecordedWithoutPidFile(t *testing.T) {
	if err := stopRecorded(filepath.Join(t.TempDir(), "none"), time.Second); err != nil {
		t.Fatalf("no pid file means nothing to stop, got %v", err)
	}
}
