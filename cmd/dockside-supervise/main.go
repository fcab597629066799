// Command dockside-supervise runs one Execution's command inside a Sandbox's primary, so that the command
// does not depend on the agent that started it (docs/design/decisions/0028-commands-run-under-a-supervisor.md).
// The agent starts it as a detached exec; it runs the command in a process group of its own, keeps the first
// LIMIT bytes of each of stdout and stderr in files under DIR and counts the rest, kills the group when
// SECONDS have passed, and exits with the command's exit code (128+signal when a signal ended it), which
// Docker keeps for exec inspect. The agent reads the files back within its own bounds: they are in a
// folder the command may write to, so nothing in them is trusted beyond being output. The command's standard
// input comes base64-encoded in the supervisor's environment (supervision.StdinEnv), which the command does not
// get; without it, the command reads the supervisor's own (end of file, in a detached exec).
//
// Usage: dockside-supervise DIR LIMIT SECONDS -- COMMAND [ARG...]
package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dockside-dev/dockside/internal/supervision"
)

const (
	// exitUsage is the exit code of a supervisor that could not start the command (126, as a shell does).
	exitUsage = 126
	// exitKilled is the exit code after the deadline killed the command's group (128+SIGKILL).
	exitKilled = 137
	// outputGrace is how long the output is still read after the command exited: a child it left running may
	// hold its streams open, and the agent kills what is left anyway (docs/design/executions.md).
	outputGrace = time.Second
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) < 5 || args[3] != "--" {
		fmt.Fprintln(os.Stderr, "usage: dockside-supervise DIR LIMIT SECONDS -- COMMAND [ARG...]")
		return exitUsage
	}
	dir, command := args[0], args[4:]
	limit, err1 := strconv.ParseInt(args[1], 10, 64)
	seconds, err2 := strconv.ParseInt(args[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil || limit < 0 || seconds <= 0 {
		fmt.Fprintln(os.Stderr, "dockside-supervise: LIMIT and SECONDS must be numbers, SECONDS > 0")
		return exitUsage
	}
	clearSiblings(dir)
	if err := freshDir(dir); err != nil {
		fmt.Fprintln(os.Stderr, "dockside-supervise:", err)
		return exitUsage
	}
	stdout, err1 := newHead(filepath.Join(dir, "stdout"), limit)
	stderr, err2 := newHead(filepath.Join(dir, "stderr"), limit)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "dockside-supervise:", err)
		return exitUsage
	}
	cmd := exec.Command(command[0], command[1:]...)
	var err error
	if cmd.Stdin, cmd.Env, err = input(os.Environ()); err != nil {
		fmt.Fprintln(os.Stderr, "dockside-supervise:", err)
		return exitUsage
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = outputGrace
	code := supervise(cmd, time.Duration(seconds)*time.Second)
	writeCut(dir, stdout.cut, stderr.cut)
	return code
}

// input is the command's standard input and environment, from the supervisor's environment env: the bytes in
// supervision.StdinEnv, which the command's environment goes without, or else the supervisor's own input.
func input(env []string) (io.Reader, []string, error) {
	var in io.Reader = os.Stdin
	out := env[:0:0]
	for _, kv := range env {
		encoded, ok := strings.CutPrefix(kv, supervision.StdinEnv+"=")
		if !ok {
			out = append(out, kv)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return nil, nil, fmt.Errorf("%s is not base64: %w", supervision.StdinEnv, err)
		}
		in = bytes.NewReader(b)
	}
	return in, out, nil
}

// supervise starts the command and waits for it, killing its process group at the deadline.
func supervise(cmd *exec.Cmd, timeout time.Duration) int {
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(cmd.Stderr, "dockside-supervise:", err)
		return exitUsage
	}
	deadline := time.AfterFunc(timeout, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	killed := !deadline.Stop()
	var exit *exec.ExitError
	switch {
	case killed:
		return exitKilled
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	return 0 // exited 0; an output copy cut short by outputGrace is not the command's failure
}

// clearSiblings removes the folders earlier runs left beside dir: a Sandbox runs one command at a time, and
// the agent has read what it needed of them before it starts the next one. What the command's user cannot
// remove stays; the run volume is small, so that only costs room.
func clearSiblings(dir string) {
	parent, self := filepath.Dir(dir), filepath.Base(dir)
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != self {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// freshDir makes dir anew, so that what the agent reads back of it is only what this run wrote: anything of
// that name (left by an earlier run, or planted by a command that guessed the name) is removed first, and a
// folder made meanwhile by someone else fails the run rather than being used.
func freshDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	return nil
}

// head writes the first limit bytes to its file and counts the rest.
type head struct {
	f     *os.File
	limit int64
	kept  int64
	cut   int64
}

func newHead(path string, limit int64) (*head, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keeping output: %w", err)
	}
	return &head{f: f, limit: limit}, nil
}

func (h *head) Write(p []byte) (int, error) {
	n := int64(len(p))
	if room := h.limit - h.kept; room < n {
		h.cut += n - max(room, 0)
		p = p[:max(room, 0)]
	}
	if len(p) > 0 {
		w, _ := h.f.Write(p) // a full volume keeps less; the command goes on
		h.kept += int64(w)
	}
	return int(n), nil
}

// writeCut records how many bytes of each stream were dropped, as "STDOUT STDERR".
func writeCut(dir string, stdout, stderr int64) {
	f, err := os.OpenFile(filepath.Join(dir, "cut"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.WriteString(f, fmt.Sprintf("%d %d\n", stdout, stderr))
}
