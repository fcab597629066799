package processes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Process is what the processes subresource says of one process, as JSON.
type Process struct {
	ID         string       `json:"id"`
	Command    []string     `json:"command"`
	Background bool         `json:"background"` // started by POST processes; false: an exec that named itself
	Running    bool         `json:"running"`
	StartTime  metav1.Time  `json:"startTime"`
	EndTime    *metav1.Time `json:"endTime,omitempty"`
	ExitCode   *int         `json:"exitCode,omitempty"` // once it exited
	Error      string       `json:"error,omitempty"`    // why it ended otherwise (its container stopped, the agent stopped)
	// TTY: it runs on a terminal, whose output is all on stdout and whose input is stdin.
	TTY bool `json:"tty,omitempty"`
	// Tag is the caller's own label for it (at most MaxTagBytes), which the data plane only keeps.
	Tag string `json:"tag,omitempty"`
	// StdoutBytes and StderrBytes count what a background process wrote, kept or not (the last OutputBytes
	// are); StdoutDropped and StderrDropped how many of the first of them are no longer kept.
	StdoutBytes   int64 `json:"stdoutBytes"`
	StderrBytes   int64 `json:"stderrBytes"`
	StdoutDropped int64 `json:"stdoutDropped"`
	StderrDropped int64 `json:"stderrDropped"`
}

// List is the answer to GET processes.
type List struct {
	Items []Process `json:"items"`
}

// Entry is one process of the table: a background process or an exec that named itself.
type Entry struct {
	id         string
	command    []string
	background bool
	started    time.Time
	signals    chan dd.Signal
	ended      chan struct{} // closed by Finish
	stdout     *Output       // background only
	stderr     *Output
	stdin      *io.PipeWriter // background with stdin only
	stdinMu    sync.Mutex     // one writer of stdin at a time
	tag        string
	resize     chan dd.TermSize // a terminal's sizes (OpenTerminal); nil: no terminal

	finished sync.Once
	mu       sync.Mutex
	endTime  time.Time
	code     *int
	err      string
}

// New is a process named id ("": the table names it) running cmd; a background one keeps its output.
func New(id string, cmd []string, background bool) *Entry {
	p := &Entry{id: id, command: cmd, background: background, started: time.Now(),
		signals: make(chan dd.Signal), ended: make(chan struct{})}
	if background {
		p.stdout, p.stderr = NewOutput(OutputBytes), NewOutput(OutputBytes)
	}
	return p
}

// useBudget makes the process's output keep what b lends it (Table.Add, before the process starts).
func (p *Entry) useBudget(b *budget) {
	for _, o := range []*Output{p.stdout, p.stderr} {
		if o != nil {
			o.mu.Lock()
			o.budget = b
			o.mu.Unlock()
		}
	}
}

// ID is the process's name in its Sandbox.
func (p *Entry) ID() string { return p.id }

// Signals are what the process's command takes its signals from (dd.StreamExecRequest.Signals).
func (p *Entry) Signals() chan dd.Signal { return p.signals }

// Output is the kept output of the stream named "stdout" or "stderr"; nil for an exec's (its client got it)
// and for any other name.
func (p *Entry) Output(stream string) *Output {
	switch stream {
	case "stdout":
		return p.stdout
	case "stderr":
		return p.stderr
	}
	return nil
}

// OpenStdin gives the process an input that WriteStdin writes, and returns its reading end for the command.
func (p *Entry) OpenStdin() io.Reader {
	pr, pw := io.Pipe()
	p.stdin = pw
	return pr
}

// MaxTagBytes bounds a process's tag.
const MaxTagBytes = 256

// SetTag labels the process (before Table.Add).
func (p *Entry) SetTag(tag string) error {
	if len(tag) > MaxTagBytes {
		return fmt.Errorf("a tag is at most %d bytes, not %d", MaxTagBytes, len(tag))
	}
	p.tag = tag
	return nil
}

// OpenTerminal gives the process a terminal of the given size (before it starts): its input is opened, and
// it returns the channel of sizes for the command (dd.StreamExecRequest.Resize), which holds the first.
func (p *Entry) OpenTerminal(size dd.TermSize) <-chan dd.TermSize {
	// One pending size: the driver applies sizes as they come, and a new one waits for the last to be taken.
	p.resize = make(chan dd.TermSize, 1)
	p.resize <- size
	return p.resize
}

// ErrNoTerminal: the process runs without a terminal, which alone has a size.
var ErrNoTerminal = errors.New("the process has no terminal")

// Resize gives the process's terminal a new size, waiting for the last one to be taken.
func (p *Entry) Resize(ctx context.Context, size dd.TermSize) error {
	if p.resize == nil {
		return ErrNoTerminal
	}
	select {
	case <-p.ended:
		return ErrEnded
	default:
	}
	select {
	case p.resize <- size:
		return nil
	case <-p.ended:
		return ErrEnded
	case <-ctx.Done():
		return fmt.Errorf("resizing the terminal of process %s: %w", p.id, ctx.Err())
	}
}

// ErrNoStdin: the process was started without an input.
var ErrNoStdin = errors.New("the process has no input")

// WriteStdin copies r to the process's input, one writer at a time, and closes the input after it when
// closeAfter; it returns how many bytes it wrote.
func (p *Entry) WriteStdin(r io.Reader, closeAfter bool) (int64, error) {
	if p.stdin == nil {
		return 0, ErrNoStdin
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	n, err := io.Copy(p.stdin, r)
	if err != nil {
		return n, fmt.Errorf("writing the input of process %s: %w", p.id, err)
	}
	if closeAfter {
		_ = p.stdin.Close()
	}
	return n, nil
}

// Finish records how the process ended and wakes whoever waits on it; only its first call counts.
func (p *Entry) Finish(res dd.StreamExecResult, err error) {
	p.finished.Do(func() { p.record(res, err) })
}

func (p *Entry) record(res dd.StreamExecResult, err error) {
	p.mu.Lock()
	p.endTime = time.Now()
	if err != nil {
		p.err = err.Error()
	} else {
		code := res.ExitCode
		p.code = &code
	}
	p.mu.Unlock()
	if p.stdout != nil {
		p.stdout.Close()
		p.stderr.Close()
	}
	close(p.ended)
}

// View is what the subresource says of the process now.
func (p *Entry) View() Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := Process{ID: p.id, Command: p.command, Background: p.background, Running: p.endTime.IsZero(),
		StartTime: metav1.NewTime(p.started), ExitCode: p.code, Error: p.err, TTY: p.resize != nil, Tag: p.tag}
	if !p.endTime.IsZero() {
		end := metav1.NewTime(p.endTime)
		v.EndTime = &end
	}
	if p.stdout != nil {
		v.StdoutBytes, v.StderrBytes = p.stdout.Total(), p.stderr.Total()
		v.StdoutDropped, v.StderrDropped = p.stdout.Dropped(), p.stderr.Dropped()
	}
	return v
}

// endedAt is when the process ended, zero while it runs.
func (p *Entry) endedAt() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endTime
}

// ErrEnded: the process has ended, and takes no signal.
var ErrEnded = errors.New("the process has ended")

// Signal sends sig to the process's group and waits for the outcome, or for the process to end.
func (p *Entry) Signal(ctx context.Context, sig syscall.Signal) error {
	done := make(chan error, 1)
	select {
	case p.signals <- dd.Signal{Number: sig, Done: done}:
	case <-p.ended:
		return ErrEnded
	case <-ctx.Done():
		return fmt.Errorf("signalling process %s: %w", p.id, ctx.Err())
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("signalling process %s: %w", p.id, ctx.Err())
	}
}
