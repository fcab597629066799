package agentproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStopKillRestartAppendToOneLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "agent.log")
	p, err := Start(exec.Command("sh", "-c", "echo up; exec sleep 60"), log)
	if err != nil {
		t.Fatal(err)
	}
	waitForStarts(t, log, 1)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.Exited(); !exited {
		t.Error("Stop returned before the process exited")
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if exited, _ := p.Exited(); exited {
		t.Error("a restarted process counts as exited")
	}
	waitForStarts(t, log, 2)
	p.Kill()
	if exited, err := p.Exited(); !exited || err == nil {
		t.Errorf("after Kill: exited %v, %v; want exited by a signal", exited, err)
	}
	p.Kill() // a second Kill finds it gone and returns
	if !strings.Contains(p.LogTail(), "up\n") {
		t.Errorf("LogTail lacks the log: %q", p.LogTail())
	}
}

// waitForStarts waits until the log says "up" n times: the process may still be starting when Start returns.
func waitForStarts(t *testing.T, log string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(data), "up\n"); got == n {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the log holds %d starts, want %d:\n%s", got, n, data)
		}
	}
}
