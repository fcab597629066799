package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/dockside-dev/dockside/test/internal/sandboxexec"
)

const (
	// execRounds is how many times each side runs `true`, alternating, for the round trip.
	execRounds = 25
	// firstByteRounds is how many times each side runs the streaming command, which lasts a second.
	firstByteRounds = 8
	// openSessions is how many exec sessions are held open at once on the one node.
	openSessions = 50
)

// streaming writes a line at once and then runs on, so that its first byte can only arrive while it runs.
var streaming = []string{"sh", "-c", "echo x; sleep 1"}

// BenchmarkExec times exec into a Sandbox through the data plane (the API server, the aggregated group, the
// agent, Docker's exec with attach) with client-go's WebSocket executor, as kubectl exec does, against
// `docker exec` of the same command in the same Sandbox's primary in the same run: the round trip of `true`
// and the time to the first byte of a streaming command. Then it holds 50 interactive sessions open at once,
// asserts that every one answered and ended without error, and reports the agent's memory per open session.
func BenchmarkExec(b *testing.B) {
	e, ns := benchNamespace(b, "exec")
	ctx := context.Background()
	sbx := session(ns, "box")
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	id := sbx.Status.ContainerID
	g := group{
		Key: "exec",
		Title: "Exec into a Sandbox through the data plane (client-go's WebSocket executor, as kubectl exec); " +
			"the streaming command is " + fmt.Sprintf("%q", streaming),
		Baseline: "docker exec of the same command in the Sandbox's primary container, from the CLI",
	}
	defer func() { record(b, g) }()
	dataplane := func(command []string, stdin bool) (remotecommand.Executor, error) {
		return sandboxexec.Executor(e.cfg, "websocket", ns, sbx.Name, url.Values{"command": command,
			"stdin": {fmt.Sprint(stdin)}, "stdout": {"true"}, "stderr": {"true"}})
	}

	trueExec, err := dataplane([]string{"true"}, false)
	if err != nil {
		b.Fatal(err)
	}
	dockside, baseline, err := alternate(execRounds,
		func() (time.Duration, error) { return timed(func() error { return execTo(ctx, trueExec, io.Discard) }) },
		func() (time.Duration, error) {
			return timed(func() error { _, err := docker("exec", id, "true"); return err })
		})
	if err != nil {
		b.Fatal(err)
	}
	goal := "≤ 1.2x docker exec"
	g.Figures = append(g.Figures,
		figure{Name: fmt.Sprintf("round trip of true, p50 of %d", execRounds), Unit: "s", Dockside: seconds(percentile(dockside, 50)), Baseline: seconds(percentile(baseline, 50)), Goal: goal},
		figure{Name: fmt.Sprintf("round trip of true, p95 of %d", execRounds), Unit: "s", Dockside: seconds(percentile(dockside, 95)), Baseline: seconds(percentile(baseline, 95))},
	)

	streamExec, err := dataplane(streaming, false)
	if err != nil {
		b.Fatal(err)
	}
	dockside, baseline, err = alternate(firstByteRounds,
		firstByte(func(stdout io.Writer) error { return execTo(ctx, streamExec, stdout) }),
		firstByte(func(stdout io.Writer) error {
			cmd := exec.Command("docker", append([]string{"exec", id}, streaming...)...)
			cmd.Stdout = stdout
			return cmd.Run()
		}))
	if err != nil {
		b.Fatal(err)
	}
	g.Figures = append(g.Figures, figure{Name: fmt.Sprintf("first stdout byte of a streaming command, p50 of %d", firstByteRounds),
		Unit: "s", Dockside: seconds(percentile(dockside, 50)), Baseline: seconds(percentile(baseline, 50)), Goal: goal})

	shell, err := dataplane([]string{"sh"}, true)
	if err != nil {
		b.Fatal(err)
	}
	failed, perSession, err := e.holdOpen(ctx, shell, openSessions)
	if err != nil {
		b.Fatal(err)
	}
	g.Figures = append(g.Figures,
		figure{Name: fmt.Sprintf("sessions of %d open at once that failed", openSessions), Unit: "count", Dockside: num(float64(len(failed))), Goal: "0"},
		figure{Name: "agent memory per open session (resident set with them open less before, over their number)", Unit: "KiB", Dockside: num(perSession / 1024)},
	)
	if len(failed) > 0 {
		b.Fatalf("%d of %d concurrent exec sessions failed: %v\n%s", len(failed), openSessions, errors.Join(failed...), e.agent.LogTail())
	}
}

// execTo runs one exec to its end, its output to stdout.
func execTo(ctx context.Context, ex remotecommand.Executor, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: io.Discard})
}

// alternate measures dockside and baseline n times each, one after the other, after one run of each not
// counted, so that neither pays for a first connection or a cold cache.
func alternate(n int, dockside, baseline func() (time.Duration, error)) (ds, bl []time.Duration, err error) {
	for i := range n + 1 {
		d, err := dockside()
		if err != nil {
			return nil, nil, err
		}
		b, err := baseline()
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			ds, bl = append(ds, d), append(bl, b)
		}
	}
	return ds, bl, nil
}

// firstByte measures a run of a streaming command from its start to the first byte it writes to stdout; a
// run that ends without writing any fails.
func firstByte(run func(stdout io.Writer) error) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		w := &firstWrite{start: time.Now()}
		if err := run(w); err != nil {
			return 0, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.at == 0 {
			return 0, errors.New("the command ended without writing to stdout")
		}
		return w.at, nil
	}
}

// firstWrite notes how long after start its first non-empty write came.
type firstWrite struct {
	mu    sync.Mutex
	start time.Time
	at    time.Duration
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == 0 && len(p) > 0 {
		w.at = time.Since(w.start)
	}
	return len(p), nil
}

// holdOpen opens n sessions of ex (a shell reading stdin) at once and waits until each has answered a line
// written to it, so that all n are open together; it reads the agent's resident set before and then, closes
// every stdin and waits for every session to end. It returns the sessions' errors and the agent's extra
// resident set per session, in bytes.
func (e *env) holdOpen(ctx context.Context, ex remotecommand.Executor, n int) (failed []error, perSession float64, err error) {
	before, _, err := e.agent.memory()
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	type session struct {
		stdin *io.PipeWriter
		ready chan error
		done  chan error
	}
	sessions := make([]session, n)
	for i := range sessions {
		in, stdin := io.Pipe()
		out, stdout := io.Pipe()
		s := session{stdin: stdin, ready: make(chan error, 1), done: make(chan error, 1)}
		sessions[i] = s
		go func() {
			err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: stdout, Stderr: io.Discard})
			stdout.CloseWithError(err) // nil: the reader sees EOF
			s.done <- err
		}()
		go func() {
			line, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && line != fmt.Sprintf("ready %d\n", i) {
				err = fmt.Errorf("session %d answered %q", i, line)
			}
			s.ready <- err
			_, _ = io.Copy(io.Discard, out)
		}()
		go func() { _, _ = fmt.Fprintf(stdin, "echo ready %d\n", i) }()
	}
	notReady := make([]error, n)
	for i, s := range sessions {
		notReady[i] = <-s.ready
	}
	with, _, err := e.agent.memory()
	for _, s := range sessions {
		s.stdin.Close() // the shell reads the end of its input and exits 0
	}
	for i, s := range sessions {
		if err := errors.Join(notReady[i], <-s.done); err != nil {
			failed = append(failed, fmt.Errorf("session %d: %w", i, err))
		}
	}
	return failed, (with - before) / float64(n), err
}
