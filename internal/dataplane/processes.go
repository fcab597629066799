package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Bounds of the process table (docs/design/dataplane.md, "Signals and background processes").
const (
	maxProcesses    = 16               // kept per Sandbox, running or ended
	processOutput   = 256 << 10        // bytes of each stream kept per background process, the last ones
	processRetained = 15 * time.Minute // how long an ended process stays listed
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
	// StdoutBytes and StderrBytes count what a background process wrote, kept or not (the last 256 KiB are).
	StdoutBytes int64 `json:"stdoutBytes"`
	StderrBytes int64 `json:"stderrBytes"`
}

// ProcessList is the answer to GET processes.
type ProcessList struct {
	Items []Process `json:"items"`
}

// process is one entry of the table.
type process struct {
	id         string
	command    []string
	background bool
	started    time.Time
	signals    chan dd.Signal
	ended      chan struct{} // closed by finish
	stdout     *tailOutput   // background only
	stderr     *tailOutput
	stdin      *io.PipeWriter // background with stdin only
	stdinMu    sync.Mutex     // one writer of stdin at a time

	finished sync.Once
	mu       sync.Mutex
	endTime  time.Time
	code     *int
	err      string
}

// finish records how the process ended and wakes whoever waits on it; only its first call counts.
func (p *process) finish(res dd.StreamExecResult, err error) {
	p.finished.Do(func() { p.record(res, err) })
}

func (p *process) record(res dd.StreamExecResult, err error) {
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

func (p *process) view() Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := Process{ID: p.id, Command: p.command, Background: p.background, Running: p.endTime.IsZero(),
		StartTime: metav1.NewTime(p.started), ExitCode: p.code, Error: p.err}
	if !p.endTime.IsZero() {
		end := metav1.NewTime(p.endTime)
		v.EndTime = &end
	}
	if p.stdout != nil {
		v.StdoutBytes, v.StderrBytes = p.stdout.Total(), p.stderr.Total()
	}
	return v
}

var errProcessEnded = errors.New("the process has ended")

// signal sends sig to the process's group and waits for the outcome, or for the process to end.
func (p *process) signal(ctx context.Context, sig syscall.Signal) error {
	done := make(chan error, 1)
	select {
	case p.signals <- dd.Signal{Number: sig, Done: done}:
	case <-p.ended:
		return errProcessEnded
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

// processTable holds, per Sandbox (by UID: a Sandbox made again under the same name starts empty), the
// processes the data plane started in the background and the execs that named themselves.
type processTable struct {
	mu        sync.Mutex
	bySandbox map[types.UID]map[string]*process
}

func newProcessTable() *processTable {
	return &processTable{bySandbox: map[types.UID]map[string]*process{}}
}

// processID is what a process may be named: a DNS label, as object names are.
var processID = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// add registers p under the Sandbox, naming it when it has no ID. It first forgets the processes that ended
// more than processRetained ago (of every Sandbox: those of a deleted one go too), then, when the Sandbox is at
// maxProcesses, its oldest ended one; a Sandbox with maxProcesses running is refused, as is the ID of a
// running process (an ended one of that ID is replaced).
func (t *processTable) add(sandbox types.UID, p *process) error {
	if p.id == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		p.id = "p-" + hex.EncodeToString(b[:])
	} else if !processID.MatchString(p.id) {
		return fmt.Errorf("process ID %q must be lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit", p.id)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep()
	procs := t.bySandbox[sandbox]
	if procs == nil {
		procs = map[string]*process{}
		t.bySandbox[sandbox] = procs
	}
	if q, taken := procs[p.id]; taken && q.view().Running {
		return fmt.Errorf("%w: a process named %q runs already", errProcessConflict, p.id)
	}
	delete(procs, p.id) // an ended one of the same name gives way
	if len(procs) >= maxProcesses {
		oldest := oldestEnded(procs)
		if oldest == nil {
			return fmt.Errorf("%w: the Sandbox already runs %d processes of the data plane: end one first", errProcessConflict, maxProcesses)
		}
		delete(procs, oldest.id)
	}
	procs[p.id] = p
	return nil
}

// sweep forgets what ended more than processRetained ago, and Sandboxes left with nothing.
func (t *processTable) sweep() {
	for uid, procs := range t.bySandbox {
		for id, p := range procs {
			if end := p.view().EndTime; end != nil && time.Since(end.Time) > processRetained {
				delete(procs, id)
			}
		}
		if len(procs) == 0 {
			delete(t.bySandbox, uid)
		}
	}
}

// oldestEnded is the process that ended first, nil when all run.
func oldestEnded(procs map[string]*process) *process {
	var oldest *process
	var at time.Time
	for _, p := range procs {
		if end := p.view().EndTime; end != nil && (oldest == nil || end.Before(&metav1.Time{Time: at})) {
			oldest, at = p, end.Time
		}
	}
	return oldest
}

var errProcessConflict = errors.New("conflict")

// get finds a process of the Sandbox.
func (t *processTable) get(sandbox types.UID, id string) *process {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bySandbox[sandbox][id]
}

// list returns the Sandbox's processes, oldest first.
func (t *processTable) list(sandbox types.UID) []Process {
	t.mu.Lock()
	procs := make([]*process, 0, len(t.bySandbox[sandbox]))
	for _, p := range t.bySandbox[sandbox] {
		procs = append(procs, p)
	}
	t.mu.Unlock()
	items := make([]Process, 0, len(procs))
	for _, p := range procs {
		items = append(items, p.view())
	}
	slices.SortFunc(items, func(a, b Process) int { return a.StartTime.Compare(b.StartTime.Time) })
	return items
}
