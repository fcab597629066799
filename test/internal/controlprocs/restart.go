package controlprocs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// exitWait bounds how long a process may take to exit: kube-apiserver drains its requests on SIGTERM.
const exitWait = time.Minute

// Stopped is a control-plane process that Kill ended, with what it ran with.
type Stopped struct {
	args []string // program and arguments: ports, certificates, data folder
	env  []string
	dir  string
}

// Kill ends process pid with SIGKILL, as a crash or the OOM killer would, and waits until it has exited. (A
// SIGTERM is no quicker way down: kube-apiserver then drains its requests, a minute and more under load.)
// What it ran with is kept, so that Start runs the same program again with the same arguments, environment
// and working folder: the same ports, certificates and data.
func Kill(pid int) (*Stopped, error) {
	args, err := cmdline(pid)
	if err != nil {
		return nil, err
	}
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	environ, err := os.ReadFile(filepath.Join(proc, "environ"))
	if err != nil {
		return nil, fmt.Errorf("reading the environment of process %d: %w", pid, err)
	}
	dir, err := os.Readlink(filepath.Join(proc, "cwd"))
	if err != nil {
		return nil, fmt.Errorf("reading the working folder of process %d: %w", pid, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("killing process %d: %w", pid, err)
	}
	for deadline := time.Now().Add(exitWait); !exited(pid); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("process %d (%s) did not exit within %s of SIGKILL", pid, args[0], exitWait)
		}
	}
	env := strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	return &Stopped{args: args, env: env, dir: dir}, nil
}

// exited says whether pid is gone or a zombie: a zombie has closed its files and ports, and waits only for
// its parent (the test's control plane) to reap it.
func exited(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the program's name, which is in parentheses and may hold spaces.
	_, after, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(after, "Z") || strings.HasPrefix(after, "X")
}

// Start runs the stopped program again as it ran, its output appended to logPath. It does not wait for the
// program to serve. The process is the caller's to end with Process.Stop.
func (s *Stopped) Start(logPath string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", logPath, err)
	}
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = s.env, s.dir, log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s again: %w", s.args[0], err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // how it exits matters only to Stop, which sends SIGTERM
		log.Close()
		close(p.exited)
	}()
	return p, nil
}

// Process is a control-plane process the test started again.
type Process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited tells whether the process has exited, as one that could not bind its port does at once.
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Stop ends the process with SIGTERM and waits for it to exit; it is killed, and that is an error, when it
// has not exited within a minute.
func (p *Process) Stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", p.cmd.Path, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(exitWait):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %s of SIGTERM", p.cmd.Path, exitWait)
	}
}
