// Package processes is the data plane's table of the processes it runs in this node's Sandboxes: background
// processes started through the processes subresource, with the tail of their output, and execs that named
// themselves so that they can be signalled; and its bounds (docs/design/dataplane.md, "Signals and
// background processes"). The HTTP side is internal/dataplane's.
package processes

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Bounds of the table.
const (
	MaxPerSandbox = 16               // processes kept per Sandbox, running or ended
	OutputBytes   = 256 << 10        // bytes of each stream kept per background process, the last ones
	Retained      = 15 * time.Minute // how long an ended process stays listed
	// OutputBudget is what the outputs of every process of the node keep together: without it, 16 processes
	// in each of 110 Sandboxes could keep 880 MiB. A stream that starts once it is spent keeps less, or
	// nothing, and counts what it drops; a forgotten process gives its room back.
	OutputBudget = 32 << 20
)

// Table holds, per Sandbox (by UID: a Sandbox made again under the same name starts empty), the processes
// the data plane started in the background and the execs that named themselves.
type Table struct {
	mu        sync.Mutex
	bySandbox map[types.UID]map[string]*Entry
	budget    *budget
}

// NewTable is an empty table whose outputs keep OutputBudget together.
func NewTable() *Table { return newTable(OutputBudget) }

func newTable(outputBudget int) *Table {
	return &Table{bySandbox: map[types.UID]map[string]*Entry{}, budget: &budget{left: outputBudget}}
}

// idPattern is what a process may be named: a DNS label, as object names are.
var idPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ErrConflict: the Sandbox has a running process of that ID, or MaxPerSandbox running.
var ErrConflict = errors.New("conflict")

// Add registers p under the Sandbox, naming it when it has no ID. It first forgets the processes that ended
// more than Retained ago (of every Sandbox: those of a deleted one go too), then, when the Sandbox is at
// MaxPerSandbox, its oldest ended one; a Sandbox with MaxPerSandbox running is refused, as is the ID of a
// running process (an ended one of that ID is replaced), both with ErrConflict.
func (t *Table) Add(sandbox types.UID, p *Entry) error {
	if p.id == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		p.id = "p-" + hex.EncodeToString(b[:])
	} else if !idPattern.MatchString(p.id) {
		return fmt.Errorf("process ID %q must be lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit", p.id)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep()
	procs := t.bySandbox[sandbox]
	if procs == nil {
		procs = map[string]*Entry{}
		t.bySandbox[sandbox] = procs
	}
	q, taken := procs[p.id]
	if taken && q.endedAt().IsZero() {
		return fmt.Errorf("%w: a process named %q runs already", ErrConflict, p.id)
	}
	if taken { // an ended one of the same name gives way
		forget(procs, q)
	}
	if len(procs) >= MaxPerSandbox {
		oldest := oldestEnded(procs)
		if oldest == nil {
			return fmt.Errorf("%w: the Sandbox already runs %d processes of the data plane: end one first", ErrConflict, MaxPerSandbox)
		}
		forget(procs, oldest)
	}
	p.useBudget(t.budget)
	procs[p.id] = p
	return nil
}

// forget takes p out of the table and gives the room its output kept back.
func forget(procs map[string]*Entry, p *Entry) {
	delete(procs, p.id)
	if p.stdout != nil {
		p.stdout.release()
		p.stderr.release()
	}
}

// sweep forgets what ended more than Retained ago, and Sandboxes left with nothing.
func (t *Table) sweep() {
	for uid, procs := range t.bySandbox {
		for _, p := range procs {
			if end := p.endedAt(); !end.IsZero() && time.Since(end) > Retained {
				forget(procs, p)
			}
		}
		if len(procs) == 0 {
			delete(t.bySandbox, uid)
		}
	}
}

// oldestEnded is the process that ended first, nil when all run.
func oldestEnded(procs map[string]*Entry) *Entry {
	var oldest *Entry
	var at time.Time
	for _, p := range procs {
		if end := p.endedAt(); !end.IsZero() && (oldest == nil || end.Before(at)) {
			oldest, at = p, end
		}
	}
	return oldest
}

// Get finds a process of the Sandbox, nil when it has none of that ID.
func (t *Table) Get(sandbox types.UID, id string) *Entry {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bySandbox[sandbox][id]
}

// List returns the Sandbox's processes, oldest first.
func (t *Table) List(sandbox types.UID) []Process {
	t.mu.Lock()
	procs := make([]*Entry, 0, len(t.bySandbox[sandbox]))
	for _, p := range t.bySandbox[sandbox] {
		procs = append(procs, p)
	}
	t.mu.Unlock()
	items := make([]Process, 0, len(procs))
	for _, p := range procs {
		items = append(items, p.View())
	}
	slices.SortFunc(items, func(a, b Process) int { return a.StartTime.Compare(b.StartTime.Time) })
	return items
}
