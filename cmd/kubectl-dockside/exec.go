package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/gorilla/websocket"
	"golang.org/x/term"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

const execUsage = `Usage: kubectl dockside exec [flags] SANDBOX -- COMMAND [ARG...]

Runs COMMAND in the Sandbox SANDBOX as kubectl exec runs one in a pod: through the API server
(subresources.dockside.dev, docs/design/dataplane.md), its output streamed as it is written, and exits with
its exit code. -i sends the plugin's standard input; -t gives it a terminal (raw mode, resized with yours;
Ctrl-C reaches the command). Without -t, Ctrl-C is sent on to the command's process group as SIGINT. What
the command started ends with it. 125 when the plugin or the server
failed (the message says why), 2 for a usage error. For a command with a deadline, recorded as an object,
use run.

Flags:
`

type execOptions struct {
	kubeFlags
	stdin, tty bool
}

func execFlags(o *execOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("kubectl dockside exec", flag.ContinueOnError)
	o.add(fs)
	fs.BoolVar(&o.stdin, "stdin", false, "send the plugin's standard input to the command")
	fs.BoolVar(&o.stdin, "i", false, "shorthand for --stdin")
	fs.BoolVar(&o.tty, "tty", false, "give the command a terminal (with -i, from a terminal)")
	fs.BoolVar(&o.tty, "t", false, "shorthand for --tty")
	return fs
}

func runExec(args []string) int {
	o := &execOptions{}
	fs := execFlags(o)
	fs.SetOutput(io.Discard)
	sandbox, command, err := parseArgs(fs, splitShortFlags(args))
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stdout, execUsage)
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		return 0
	}
	if err != nil {
		return fail(exitUsage, "%v (run takes --timeout, --env and --workdir)\n\n%s", err, execUsage)
	}
	cfg, ns, err := o.config()
	if err != nil {
		return fail(exitNoCommand, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	code, err := streamExec(ctx, cfg, ns, sandbox, command, o.stdin, o.tty)
	if err != nil {
		return fail(exitNoCommand, "%v", err)
	}
	return code
}

// splitShortFlags spells -it and -ti, as kubectl takes them, as -i -t, up to the "--" that starts the command.
func splitShortFlags(args []string) []string {
	out := make([]string, 0, len(args)+1)
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "-it" || a == "-ti" {
			out = append(out, "-i", "-t")
			continue
		}
		out = append(out, a)
	}
	return out
}

// execURL is the exec subresource of the Sandbox, with the query kubectl exec sends for pods.
// Without a terminal it names the exec (process=ID) so that Ctrl-C can be sent on to it as a signal.
func execURL(cfg *rest.Config, ns, sandbox string, command []string, stdin, tty bool, process string) (*url.URL, error) {
	u, err := subresourceURL(cfg, ns, sandbox, "exec")
	if err != nil {
		return nil, err
	}
	q := url.Values{"command": command, "stdout": {"true"}}
	q.Set("stdin", fmt.Sprint(stdin))
	q.Set("tty", fmt.Sprint(tty))
	q.Set("stderr", fmt.Sprint(!tty)) // a terminal's output is one stream
	if process != "" {
		q.Set("process", process)
	}
	u.RawQuery = q.Encode()
	return u, nil
}

// streamExec runs the command as kubectl exec does and returns its exit code.
//
//nolint:wrapcheck // client-go's errors say what failed (the upgrade, the server's refusal) in kubectl's words
func streamExec(ctx context.Context, cfg *rest.Config, ns, sandbox string, command []string, stdin, tty bool) (int, error) {
	process := ""
	if !tty {
		process = newProcessID()
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer stop()
		forwardInterrupts(ctx, cfg, ns, sandbox, process, stop)
	}
	executor, err := newExecutor(cfg, ns, sandbox, command, stdin, tty, process)
	if err != nil {
		return 0, err
	}
	opts := remotecommand.StreamOptions{Stdout: os.Stdout, Stderr: os.Stderr, Tty: tty}
	if stdin {
		opts.Stdin = os.Stdin
	}
	if tty {
		opts.Stderr = nil
		restore, sizes, err := rawTerminal(ctx, stdin)
		if err != nil {
			return 0, err
		}
		defer restore()
		opts.TerminalSizeQueue = sizes
	}
	code, err := exitCodeOf(executor.StreamWithContext(ctx, opts))
	if brokenStream(err) {
		return 0, fmt.Errorf("the connection to the Sandbox broke before the command ended (its agent or the API server stopped); "+
			"the command's input is closed, and what it did after is unknown: %w", err)
	}
	return code, err
}

// brokenStream tells whether err is the connection cut under a stream under way, as client-go reports it: the
// WebSocket closed without the server's status (its agent was killed; docs/agent.md, "When the API server is
// out"), or the connection ended in the middle of a read.
func brokenStream(err error) bool {
	var closed *websocket.CloseError
	return (errors.As(err, &closed) && closed.Code != websocket.CloseNormalClosure) || errors.Is(err, io.ErrUnexpectedEOF)
}

// newExecutor is an executor of the command as kubectl exec makes one: WebSocket, falling back to SPDY.
//
//nolint:wrapcheck // client-go's errors say what failed in kubectl's words
func newExecutor(cfg *rest.Config, ns, sandbox string, command []string, stdin, tty bool, process string) (remotecommand.Executor, error) {
	u, err := execURL(cfg, ns, sandbox, command, stdin, tty, process)
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
}

// exitCodeOf is the exit code a finished stream reports: its command's, or the error that ended the stream.
func exitCodeOf(err error) (int, error) {
	var exit utilexec.CodeExitError
	switch {
	case errors.As(err, &exit):
		return exit.Code, nil
	case err != nil:
		return 0, err
	}
	return 0, nil
}

// rawTerminal puts the plugin's terminal in raw mode (when its input goes to the command: keys such as
// Ctrl-C then reach the command's terminal, not the plugin) and reports its size now and on every SIGWINCH.
func rawTerminal(ctx context.Context, stdin bool) (func(), remotecommand.TerminalSizeQueue, error) {
	in, out := int(os.Stdin.Fd()), int(os.Stdout.Fd())
	restore := func() {}
	if stdin {
		if !term.IsTerminal(in) {
			return nil, nil, errors.New("-t with -i needs a terminal on standard input; leave -t out to pipe input")
		}
		state, err := term.MakeRaw(in)
		if err != nil {
			return nil, nil, fmt.Errorf("raw mode: %w", err)
		}
		restore = func() { _ = term.Restore(in, state) }
	}
	return restore, newSizeQueue(ctx, out), nil
}

// sizeQueue sends the terminal's size first and then after each SIGWINCH, until ctx ends.
type sizeQueue struct {
	ctx   context.Context
	fd    int
	first bool
	winch chan os.Signal
}

func newSizeQueue(ctx context.Context, fd int) *sizeQueue {
	q := &sizeQueue{ctx: ctx, fd: fd, first: true, winch: make(chan os.Signal, 1)}
	signal.Notify(q.winch, syscall.SIGWINCH)
	context.AfterFunc(ctx, func() { signal.Stop(q.winch) })
	return q
}

// Next blocks until the size changes; nil ends the queue.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	for {
		if !q.first {
			select {
			case <-q.ctx.Done():
				return nil
			case <-q.winch:
			}
		}
		q.first = false
		if w, h, err := term.GetSize(q.fd); err == nil {
			return &remotecommand.TerminalSize{Width: uint16(w), Height: uint16(h)}
		}
	}
}
