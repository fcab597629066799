package dockerdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/versions"
	"github.com/docker/docker/pkg/stdcopy"
)

// heldOpenPoll is how often a streamed command is checked for exit while its output stays open: children it
// left in the background can hold the stream open after it exited, and they must end with it.
const heldOpenPoll = time.Second

// A terminal size Docker refused (the exec's process did not exist yet) is tried again resizeRetries times,
// resizeRetry apart.
const (
	resizeRetry   = 50 * time.Millisecond
	resizeRetries = 40
)

// StreamExec runs req.Command with its streams attached. Every Docker exec leads a session of its own (runc
// calls setsid), so "the processes it started" are the container's processes in that session, and those
// are killed when the command exits (what it left in the background) or when ctx ends first.
func (d *Docker) StreamExec(ctx context.Context, name string, req StreamExecRequest) (StreamExecResult, error) {
	if err := req.Validate(name); err != nil {
		return StreamExecResult{}, err
	}
	info, err := d.running(ctx, name, PhaseExec)
	if err != nil {
		return StreamExecResult{}, err
	}
	if info.State == StatePaused {
		return StreamExecResult{}, NewError(KindConflict, PhaseExec, name, "the container is paused")
	}
	if req.TTY && !hostPIDs(info.Runtime) {
		// runsc 20221219 under Docker's runc shim gives an exec asking for a terminal none: the command would
		// run on pipes (tty says "not a tty"), so a shell would wait for input with no prompt.
		return StreamExecResult{}, refusedUnderGVisor(name, info.Runtime, "a terminal is refused, since runsc gives the command none")
	}
	first := firstSize(req)
	consoleSize := consoleSizeOf(first)
	created, err := d.cli.ContainerExecCreate(ctx, info.ID, container.ExecOptions{
		Cmd: req.Command, Env: envList(req.Env), WorkingDir: req.WorkingDir, Tty: req.TTY,
		AttachStdin: req.Stdin != nil, AttachStdout: true, AttachStderr: !req.TTY, ConsoleSize: consoleSize,
	})
	if err != nil {
		return StreamExecResult{}, d.classify(err, PhaseExec, name)
	}
	resp, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{Tty: req.TTY, ConsoleSize: consoleSize})
	if err != nil {
		return StreamExecResult{}, d.classify(err, PhaseExec, name)
	}
	defer resp.Close()
	s := &session{d: d, container: info.ID, name: name, exec: created.ID, hostPIDs: hostPIDs(info.Runtime), runtime: info.Runtime}
	if first != nil && versions.LessThan(d.cli.ClientVersion(), consoleSizeAPI) {
		// Docker before API 1.42 starts the command on a terminal of 0x0 (the client drops ConsoleSize), so the
		// first size is set now, before any input is passed on: what is typed reads the size asked. A command
		// that reads the size before any input (stty size as the command itself) may still see 0x0, and then
		// the SIGWINCH that comes with this size.
		s.setSize(ctx, *first)
	}
	if req.Resize != nil {
		go s.resize(ctx, req.Resize)
	}
	if req.Signals != nil {
		relayed := make(chan struct{})
		defer close(relayed)
		go s.relaySignals(ctx, relayed, req.Signals)
	}
	if req.Stdin != nil {
		go func() { // ends with the client's input, or when resp is closed
			if _, err := io.Copy(resp.Conn, req.Stdin); err == nil {
				_ = resp.CloseWrite()
			}
		}()
	}
	copied := make(chan error, 1)
	go func() { copied <- copyOutput(resp.Reader, req) }()
	exitCode, drained, err := s.wait(ctx, copied)
	ended, endErr := s.end(ctx)
	if !drained { // the writers are the caller's: no copy may outlive the call
		resp.Close()
		<-copied
	}
	if err != nil {
		return StreamExecResult{Ended: ended}, errors.Join(err, endErr)
	}
	return StreamExecResult{ExitCode: exitCode, Ended: ended}, endErr
}

// copyOutput copies the exec's output to the request's writers as it comes: one stream with a terminal,
// Docker's multiplexed stdout and stderr without.
func copyOutput(r io.Reader, req StreamExecRequest) error {
	stdout, stderr := orDiscard(req.Stdout), orDiscard(req.Stderr)
	if req.TTY {
		if _, err := io.Copy(stdout, r); err != nil {
			return fmt.Errorf("copying the exec's output: %w", err)
		}
		return nil
	}
	if _, err := stdcopy.StdCopy(stdout, stderr, r); err != nil {
		return fmt.Errorf("copying the exec's output: %w", err)
	}
	return nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// session is one streamed exec: its Docker exec ID and the host PID that leads its session.
type session struct {
	d         *Docker
	container string // container ID
	name      string
	exec      string
	pid       int    // the host PID that led the session, once an inspection after its exit gave it
	hostPIDs  bool   // the container's processes are the host's (hostPIDs): they can be signalled and ended
	runtime   string // the container's OCI runtime, for the refusal when they are not
}

// wait returns the command's exit code once its output closed and it exited, or once it exited while its
// background children hold the output open; drained says whether the output copy is over. A cut stream or
// an ended ctx is an error.
func (s *session) wait(ctx context.Context, copied <-chan error) (code int, drained bool, err error) {
	tick := time.NewTicker(heldOpenPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return 0, false, NewError(KindUncertain, PhaseExec, s.name, "the stream ended before the command: its processes were ended")
		case err := <-copied:
			if err != nil {
				return 0, true, NewError(KindUncertain, PhaseExec, s.name, "the output stream broke: the command's processes were ended")
			}
			ins, err := s.d.awaitExitInspect(ctx, s.exec, s.name)
			s.pid = ins.Pid
			return ins.ExitCode, true, err
		case <-tick.C:
			ins, err := s.d.cli.ContainerExecInspect(ctx, s.exec)
			if err == nil && !ins.Running && ins.Pid != 0 {
				s.pid = ins.Pid
				return ins.ExitCode, false, nil
			}
		}
	}
}

// consoleSizeAPI is the first Docker API whose exec takes the terminal's size it starts on (ConsoleSize).
const consoleSizeAPI = "1.42"

// firstSize is the terminal size the request already holds (OpenTerminal's, in the data plane), taken off
// req.Resize so that the command starts on it; nil without a terminal or when none came yet.
func firstSize(req StreamExecRequest) *TermSize {
	if !req.TTY || req.Resize == nil {
		return nil
	}
	select {
	case sz, ok := <-req.Resize:
		if ok {
			return &sz
		}
	default:
	}
	return nil
}

// consoleSizeOf is size as Docker's ConsoleSize, [height, width]; nil for nil.
func consoleSizeOf(size *TermSize) *[2]uint {
	if size == nil {
		return nil
	}
	return &[2]uint{uint(size.Height), uint(size.Width)}
}

// setSize gives the exec's terminal its size, tried again while Docker refuses it (the exec's process does
// not exist yet), at most resizeRetries times.
func (s *session) setSize(ctx context.Context, size TermSize) {
	for range resizeRetries {
		err := s.d.cli.ContainerExecResize(ctx, s.exec, container.ResizeOptions{Height: uint(size.Height), Width: uint(size.Width)})
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(resizeRetry):
		}
	}
}

// resize passes the client's terminal sizes on until the channel closes or ctx ends. Docker refuses a size
// until the exec's process exists, which comes a moment after the attach that starts it: a refused size is
// tried again for a while (resizeRetries), unless a newer one comes first.
func (s *session) resize(ctx context.Context, sizes <-chan TermSize) {
	var pending *TermSize
	tries := 0
	for {
		var retry <-chan time.Time
		if pending != nil {
			retry = time.After(resizeRetry)
		}
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			pending, tries = &sz, 0
		case <-retry:
		}
		if pending == nil {
			continue
		}
		err := s.d.cli.ContainerExecResize(ctx, s.exec, container.ResizeOptions{Height: uint(pending.Height), Width: uint(pending.Width)})
		if tries++; err == nil || tries >= resizeRetries {
			pending = nil
		}
	}
}

// end kills what is left of the exec's session, even when ctx is over.
func (s *session) end(ctx context.Context) (int, error) {
	if !s.hostPIDs { // under gVisor what the exec left lives on in the sandbox, within its limits
		return 0, nil
	}
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	if s.pid == 0 { // the stream was cut, or the output broke: not inspected yet
		ins, err := s.d.cli.ContainerExecInspect(kctx, s.exec)
		if err != nil {
			return 0, s.d.classify(err, PhaseExec, s.name)
		}
		if ins.Pid == 0 { // never started
			return 0, nil
		}
		s.pid = ins.Pid
	}
	return s.d.killSession(kctx, s.container, s.name, s.pid)
}
