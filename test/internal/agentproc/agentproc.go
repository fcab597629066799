// Package agentproc runs an agent as a child process of the end-to-end tests and the benchmarks: its output
// goes to a log file of its own; it is stopped as systemd or the kubelet would stop it, killed as a crash
// would, and started again as a process supervisor would.
package agentproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before it kills.
const stopGrace = 30 * time.Second

// Process is one agent process, started again after Kill by Restart.
type Process struct {
	Log string // the file its standard output and error are appended to
	run *run
}

// run is one start of the process.
type run struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and its log is closed
	err    error         // how it exited, once exited is closed
}

// BinDir is where `make build` put the binaries under test: $DOCKSIDE_BIN, or bin/ of the repository seen
// from a package two folders down (test/e2e, test/bench).
func BinDir() string {
	if dir := os.Getenv("DOCKSIDE_BIN"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "bin")
}

// Start starts cmd with its standard output and error appended to logPath.
func Start(cmd *exec.Cmd, logPath string) (*Process, error) {
	p := &Process{Log: logPath}
	return p, p.start(cmd)
}

func (p *Process) start(cmd *exec.Cmd) error {
	logFile, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the agent's log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting the agent: %w", err)
	}
	r := &run{cmd: cmd, exited: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		logFile.Close()
		close(r.exited)
	}()
	p.run = r
	return nil
}

// Pid is the process id of the agent started last.
func (p *Process) Pid() int { return p.run.cmd.Process.Pid }

// Exited tells, without waiting, whether the agent started last has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.run.exited:
		return true, p.run.err
	default:
		return false, nil
	}
}

// Stop asks the agent to exit (SIGTERM) and kills it if it has not within 30 s, which is an error.
func (p *Process) Stop() error {
	_ = p.run.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.run.exited:
		return nil
	case <-time.After(stopGrace):
		p.Kill()
		return fmt.Errorf("the agent did not exit within %s of SIGTERM", stopGrace)
	}
}

// Kill ends the agent with SIGKILL, as a crash or the OOM killer would: it releases nothing, not even its
// Lease. It returns once the process is gone.
func (p *Process) Kill() {
	_ = p.run.cmd.Process.Kill()
	<-p.run.exited
}

// Restart starts the agent again, after Kill or Stop, with the same command line and environment, its
// output appended to the same log.
func (p *Process) Restart() error {
	again := exec.Command(p.run.cmd.Path, p.run.cmd.Args[1:]...)
	again.Env = p.run.cmd.Env
	return p.start(again)
}

// LogTail is the end of the agent's log, for failure messages.
func (p *Process) LogTail() string {
	data, _ := os.ReadFile(p.Log)
	const keep = 4000
	if len(data) > keep {
		data = data[len(data)-keep:]
	}
	return "---- agent log (" + p.Log + ") ----\n" + string(data)
}
