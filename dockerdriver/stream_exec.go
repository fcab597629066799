package dockerdriver

import (
	"io"
	"syscall"
)

// StreamExecRequest is an interactive command in a running container (the data plane's exec,
// docs/design/dataplane.md): its streams are copied as they are written, for as long as it runs. It runs as
// the container's own user, like ExecRequest, and has no deadline of its own: it ends when its command exits
// or when ctx ends (the client went away), and either way the processes it started end with it.
type StreamExecRequest struct {
	Command    []string
	Env        []EnvVar
	WorkingDir string
	// TTY gives the command a terminal: its output is one stream (Stdout), and Ctrl-C, Ctrl-Z and Ctrl-\
	// typed into Stdin reach its foreground processes as signals through the terminal's line discipline.
	TTY bool
	// Stdin is copied to the command's standard input until it ends (EOF then closes the command's input);
	// nil attaches none.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output as it comes; nil discards it. With TTY, Stderr is unused.
	Stdout io.Writer
	Stderr io.Writer
	// Resize carries the client's terminal sizes (TTY only); nil: the terminal keeps Docker's default size.
	Resize <-chan TermSize
	// Signals carries signals for the command's process group while it runs, as a terminal's Ctrl-C reaches
	// it, with or without a terminal; each Signal's Done receives the outcome. nil: none.
	Signals <-chan Signal
}

// Signal is one signal for a streamed command's process group; Done (buffered by the sender) receives nil once
// it was sent, or why it could not be.
type Signal struct {
	Number syscall.Signal
	Done   chan<- error
}

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width  uint16
	Height uint16
}

// StreamExecResult is how a streamed command ended.
type StreamExecResult struct {
	ExitCode int // the command's exit code
	// Ended counts the processes of the command's session that were still running when it ended (children
	// left in the background) or when its stream was cut, and were killed.
	Ended int
}

// Validate checks what can never succeed, before anything is asked of Docker.
func (req StreamExecRequest) Validate(name string) error {
	if len(req.Command) == 0 {
		return NewError(KindInvalidSpec, PhaseExec, name, "a command is required")
	}
	for i, e := range req.Env {
		if e.Name == "" {
			return errorf(KindInvalidSpec, PhaseExec, name, "environment variable %d has no name", i)
		}
	}
	if req.Resize != nil && !req.TTY {
		return NewError(KindInvalidSpec, PhaseExec, name, "only a terminal can be resized")
	}
	return nil
}
