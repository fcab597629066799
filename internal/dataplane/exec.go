package dataplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/processes"
)

const (
	// streamIdleTimeout ends an exec whose connection carried nothing for this long (the kubelet's default
	// --streaming-connection-idle-timeout).
	streamIdleTimeout = 4 * time.Hour
	// streamCreationTimeout bounds how long a SPDY client takes to open its streams.
	streamCreationTimeout = 30 * time.Second
)

// execOptions reads the exec query of kubectl and client-go (stdin=true) and of the kubelet's own form
// (stdin=1); stderr is dropped with a terminal, whose output is one stream.
func execOptions(r *http.Request) ([]string, *remotecommand.Options, error) {
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		return nil, nil, fmt.Errorf("a command is required: add command=... to the query, once per argument")
	}
	flag := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" || v == "1" {
			return v == "1", nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, fmt.Errorf("%s=%q is not true or false", name, v)
		}
		return b, nil
	}
	opts := &remotecommand.Options{}
	for name, into := range map[string]*bool{"stdin": &opts.Stdin, "stdout": &opts.Stdout, "stderr": &opts.Stderr, "tty": &opts.TTY} {
		v, err := flag(name)
		if err != nil {
			return nil, nil, err
		}
		*into = v
	}
	if opts.TTY {
		opts.Stderr = false
	}
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		return nil, nil, fmt.Errorf("at least one of stdin, stdout and stderr must be true")
	}
	return cmd, opts, nil
}

// serveExec speaks Kubernetes' exec stream protocols, SPDY v1 to v4 (the kubelet's, through cri-streaming)
// and WebSocket v4 and v5 (websocket.go), and runs the command in the container through the driver.
func serveExec(w http.ResponseWriter, r *http.Request, e executor, container string) {
	cmd, opts, err := execOptions(r)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "%v", err)
		return
	}
	websocket := wsstream.IsWebSocketRequest(r)
	bound := boundSPDY
	if websocket {
		bound = nil // its messages are bounded as they are read (maxChannelMessage)
	}
	w, r, cancel := watchConnection(w, r, bound)
	defer cancel()
	if websocket {
		serveWebSocketExec(w, r, e, container, cmd, opts)
		return
	}
	remotecommand.ServeExec(w, r, e, "", "", container, cmd, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// executor runs ServeExec's commands with the driver's StreamExec; with proc (an exec that named itself with
// process=ID) the command takes signals from it and records how it ended in it.
type executor struct {
	driver dd.Driver
	proc   *processes.Entry
	env    []dd.EnvVar // the Sandbox's commandEnv (docs/pools.md)
}

func (e executor) ExecInContainer(ctx context.Context, _, _, container string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	req := dd.StreamExecRequest{Command: cmd, Env: e.env, TTY: tty, Stdin: in}
	if out != nil {
		req.Stdout = out
	}
	if errOut != nil {
		req.Stderr = errOut
	}
	if tty && resize != nil {
		sizes := make(chan dd.TermSize)
		req.Resize = sizes
		go forwardSizes(ctx, resize, sizes)
	}
	if e.proc != nil {
		req.Signals = e.proc.Signals()
	}
	res, err := e.driver.StreamExec(ctx, container, req)
	if e.proc != nil {
		e.proc.Finish(res, err)
	}
	var gone *sandboxGone
	switch {
	case errors.As(context.Cause(ctx), &gone):
		return gone // the Sandbox was deleted or rebuilt under the command: say so (calls.go)
	case err != nil:
		return fmt.Errorf("%s: %w", cmd[0], err)
	case res.ExitCode != 0:
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", res.ExitCode), Code: res.ExitCode}
	}
	return nil
}

// forwardSizes converts the protocol's terminal sizes into the driver's until either side ends.
func forwardSizes(ctx context.Context, in <-chan remotecommand.TerminalSize, out chan<- dd.TermSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case sz, ok := <-in:
			if !ok {
				return
			}
			select {
			case out <- dd.TermSize{Width: sz.Width, Height: sz.Height}:
			case <-ctx.Done():
				return
			}
		}
	}
}
