package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// The interpreter's protocol, version 1: JSON lines over the exec's stdin and stdout
// (docs/design/interpreter.md, "The protocol, version 1").

const interpreterProtocol = 1

// pyMessage is any line the interpreter writes: ready, stream, result or error.
type pyMessage struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	ID       string `json:"id"`
	// stream
	Name string `json:"name"`
	Text string `json:"text"`
	// result
	Status               string   `json:"status"`
	Stdout               string   `json:"stdout"`
	StdoutTruncatedBytes int64    `json:"stdout_truncated_bytes"`
	Stderr               string   `json:"stderr"`
	StderrTruncatedBytes int64    `json:"stderr_truncated_bytes"`
	Value                *pyValue `json:"value"`
	Error                *pyError `json:"error"`
	// error
	Message string `json:"message"`
}

type pyValue struct {
	Repr string `json:"repr"`
}

type pyError struct {
	Name      string   `json:"name"`
	Value     string   `json:"value"`
	Traceback []string `json:"traceback"`
}

type pyExecute struct {
	Type           string `json:"type"`
	ID             string `json:"id"`
	Code           string `json:"code"`
	Stream         bool   `json:"stream"`
	MaxOutputBytes int    `json:"max_output_bytes"`
}

type pyInterrupt struct {
	Type string `json:"type"`
}

// interruptGrace is how long a cancelled call waits for the result after an interrupt before it ends the
// session: code that catches KeyboardInterrupt, or blocks in C, would otherwise run on (the Python client
// waits as long).
const interruptGrace = 5 * time.Second

// run executes code and returns its result, writing the stream messages to output as they come. When ctx
// ends first it interrupts the code and, if the result does not come within interruptGrace, ends the session.
func (it *interpreter) run(ctx context.Context, code string, maxOutput int, output io.Writer) (pyMessage, error) {
	it.calls.Lock()
	defer it.calls.Unlock()
	it.nextID++
	id := fmt.Sprintf("c%d", it.nextID)
	answer := make(chan answered, 1)
	go func() { answer <- it.await(id, output) }()
	if err := it.send(pyExecute{Type: "execute", ID: id, Code: code, Stream: true, MaxOutputBytes: maxOutput}); err != nil {
		it.end()
		<-answer
		return pyMessage{}, err
	}
	select {
	case a := <-answer:
		return a.msg, a.err
	case <-ctx.Done():
	}
	if it.send(pyInterrupt{Type: "interrupt"}) == nil {
		select {
		case <-answer:
			return pyMessage{}, fmt.Errorf("interrupted (the session keeps its variables): %w", context.Cause(ctx))
		case <-time.After(interruptGrace):
		}
	}
	it.end() // the read that awaits fails with it
	<-answer
	return pyMessage{}, fmt.Errorf("the code did not stop when interrupted, so the interpreter was ended and its variables are gone: %w", context.Cause(ctx))
}

type answered struct {
	msg pyMessage
	err error
}

func (it *interpreter) send(msg any) error {
	line, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encoding a request to the interpreter: %w", err)
	}
	if _, err := it.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%w: %w", errInterpreterEnded, err)
	}
	return nil
}

// await reads lines until the result of request id, after the ready line when the session has not yet
// written it; results of earlier requests (interrupted, their caller gone) are skipped.
func (it *interpreter) await(id string, output io.Writer) answered {
	for {
		line, err := readLine(it.lines, maxInterpreterLine)
		if errors.Is(err, errLineTooLong) {
			it.end()
			return answered{err: err}
		}
		if err != nil {
			return answered{err: fmt.Errorf("%w: %w", errInterpreterEnded, err)}
		}
		var msg pyMessage
		if err := json.Unmarshal(line, &msg); err != nil {
			return answered{err: fmt.Errorf("the interpreter wrote what is not its protocol (%q): %w", strings.TrimSpace(string(line)), err)}
		}
		switch {
		case msg.Type == "ready" && msg.Protocol != interpreterProtocol:
			it.end()
			return answered{err: fmt.Errorf("the interpreter speaks protocol %d, this server %d: use an image and a kubectl-dockside of the same release", msg.Protocol, interpreterProtocol)}
		case msg.ID != id:
		case msg.Type == "stream":
			_, _ = io.WriteString(output, msg.Text)
		case msg.Type == "result":
			return answered{msg: msg}
		case msg.Type == "error":
			return answered{err: fmt.Errorf("the interpreter refused the request: %s", msg.Message)}
		}
	}
}

// maxInterpreterLine bounds one line the interpreter writes. The interpreter runs in the Sandbox, so what it
// writes is the tenant's: its results hold at most the output bytes the server asks for (twice, stdout and
// stderr, JSON-escaped up to six bytes a byte; kubectl dockside mcp takes --max-output-bytes up to 1 MiB).
const maxInterpreterLine = 16 << 20

var errLineTooLong = fmt.Errorf("the interpreter wrote a line over %d bytes, which its protocol never does: the session is ended", maxInterpreterLine)

// readLine reads one line of at most limit bytes, holding no more than that whatever the writer sends.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > limit {
			return nil, errLineTooLong
		}
		line = append(line, part...)
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, fmt.Errorf("reading the interpreter's output: %w", err)
		}
	}
}
