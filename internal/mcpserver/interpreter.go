package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// interpreters holds one interpreter session per Sandbox: the exec of the interpreter's command, kept open
// between calls so that variables and imports persist (docs/design/interpreter.md).
type interpreters struct {
	dp      DataPlane
	command []string
	mu      sync.Mutex
	byKey   map[string]*interpreter
}

func newInterpreters(dp DataPlane, command []string) *interpreters {
	return &interpreters{dp: dp, command: command, byKey: map[string]*interpreter{}}
}

// interpreter is one session: its exec, and the lines it answers with.
type interpreter struct {
	calls  sync.Mutex // one call at a time: the interpreter runs one piece of code at a time
	stdin  *io.PipeWriter
	lines  *bufio.Reader
	stderr *bounded
	cancel context.CancelFunc
	ended  chan struct{} // closed when the exec ends
	err    error         // why it ended, set before ended is closed
	nextID int           // requests are named c1, c2...
}

// interpreterStderrBytes bounds what the server keeps of an interpreter's own stderr (its crash, if any).
const interpreterStderrBytes = 8 << 10

// get returns the Sandbox's session, starting one when it has none or its last one ended; fresh says it was
// started now (so nothing defined before is there).
func (is *interpreters) get(ns, sandbox string) (it *interpreter, fresh bool) {
	is.mu.Lock()
	defer is.mu.Unlock()
	key := ns + "/" + sandbox
	if it := is.byKey[key]; it != nil && !it.hasEnded() {
		return it, false
	}
	it = is.start(ns, sandbox)
	is.byKey[key] = it
	return it, true
}

// start runs the interpreter's exec; it lives until close, or until the Sandbox or the connection ends it.
func (is *interpreters) start(ns, sandbox string) *interpreter {
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	it := &interpreter{stdin: inW, lines: bufio.NewReader(outR), stderr: newBounded(interpreterStderrBytes), cancel: cancel, ended: make(chan struct{})}
	go func() {
		code, err := is.dp.Exec(ctx, ns, sandbox, is.command, inR, outW, it.stderr)
		if err == nil {
			err = fmt.Errorf("the interpreter exited with code %d", code)
		}
		if s := it.stderr.String(); s != "" {
			err = fmt.Errorf("%w; its stderr: %s", err, s)
		}
		it.err = err
		close(it.ended)
		_ = outW.CloseWithError(err) // a read waiting for a line gets why there is none
		_ = inR.CloseWithError(err)
	}()
	return it
}

func (it *interpreter) hasEnded() bool {
	select {
	case <-it.ended:
		return true
	default:
		return false
	}
}

// close ends the Sandbox's session, if any.
func (is *interpreters) close(ns, sandbox string) {
	is.mu.Lock()
	it := is.byKey[ns+"/"+sandbox]
	delete(is.byKey, ns+"/"+sandbox)
	is.mu.Unlock()
	if it != nil {
		it.end()
	}
}

// closeAll ends every session.
func (is *interpreters) closeAll() {
	is.mu.Lock()
	all := is.byKey
	is.byKey = map[string]*interpreter{}
	is.mu.Unlock()
	for _, it := range all {
		it.end()
	}
}

// end ends the exec, which ends the interpreter in the Sandbox, and waits until it has.
func (it *interpreter) end() {
	it.cancel()
	<-it.ended
}

// errInterpreterEnded is a session that ended under a call.
var errInterpreterEnded = errors.New("the interpreter session ended")
