package conformance

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// StreamCommand is the streamed exec's command: it says "ready", waits for a line on its input, answers
// "got:" and the line on stderr and exits 3. A fake has to play it so.
var StreamCommand = []string{"sh", "-c", "echo ready; read line; echo got:$line >&2; exit 3"}

// streamWait bounds how long a behaviour waits for a streamed line on a loaded machine.
const streamWait = 30 * time.Second

// lockedBuffer is a writer the behaviour reads while the exec writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func streamExecStreams(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	started(t, h, s)
	in, feed := io.Pipe()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	type outcome struct {
		res dd.StreamExecResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.Driver.StreamExec(ctx, s.Name, dd.StreamExecRequest{Command: StreamCommand, Stdin: in, Stdout: stdout, Stderr: stderr})
		done <- outcome{res, err}
	}()
	// The command waits for its input: "ready" can only have come while it runs.
	g.Eventually(stdout.String, streamWait, 10*time.Millisecond).Should(Equal("ready\n"), "the first line streams before the command ends")
	g.Consistently(done, 100*time.Millisecond).ShouldNot(Receive(), "the command waits for its input")
	_, err := feed.Write([]byte("hi\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(feed.Close()).To(Succeed())
	var out outcome
	g.Eventually(done, streamWait).Should(Receive(&out))
	g.Expect(out.err).NotTo(HaveOccurred())
	g.Expect(out.res.ExitCode).To(Equal(3))
	g.Expect(stderr.String()).To(Equal("got:hi\n"))
}

func streamExecCut(t T, h Harness) {
	g, o := NewWithT(t), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	started(t, h, s)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err := h.Driver.StreamExec(ctx, s.Name, dd.StreamExecRequest{Command: SleepCommand})
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindUncertain), "a stream cut before the command ends is an error: %v", err)
	info, err := h.Driver.ObserveContainer(t.Context(), s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.State).To(Equal(dd.StateRunning), "only the exec's processes end, not the container")
}

func streamExecRefused(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	started(t, h, s)
	g.Expect(h.Driver.PauseContainer(ctx, s.Name)).To(Succeed())
	req := dd.StreamExecRequest{Command: SleepCommand}
	_, err := h.Driver.StreamExec(ctx, s.Name, req)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "paused: %v", err)
	g.Expect(h.Driver.UnpauseContainer(ctx, s.Name)).To(Succeed())
	g.Expect(h.Driver.StopContainer(ctx, s.Name, 0)).To(Succeed())
	_, err = h.Driver.StreamExec(ctx, s.Name, req)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "stopped: %v", err)
	_, err = h.Driver.StreamExec(ctx, s.Name, dd.StreamExecRequest{})
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindInvalidSpec), "no command: %v", err)
}
