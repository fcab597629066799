//go:build integration

package dockerdriver_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/test/internal/syncbuffer"
)

// What only a real daemon can show of StreamExec: the processes of an exec end with it, a terminal is a
// terminal and takes its size from the client.
var _ = Describe("StreamExec", func() {
	var target dd.ContainerSpec
	BeforeEach(func(ctx SpecContext) {
		target = spec(newOwner("exec-stream"), dsv1alpha1.RolePrimary, "")
		run(ctx, target)
	})

	// sleepers counts the container's `sleep 3600`s other than its own command (PID 1), as the host sees them.
	sleepers := func(ctx context.Context) int {
		top, err := docker.ContainerTop(ctx, target.Name, []string{"-o", "pid,args"})
		Expect(err).NotTo(HaveOccurred())
		n := 0
		for _, p := range top.Processes {
			if strings.HasSuffix(p[len(p)-1], "sleep 3600") {
				n++
			}
		}
		return n - 1
	}

	It("ends what the command left in the background when it exits", func(ctx SpecContext) {
		var out bytes.Buffer
		res, err := driver.StreamExec(ctx, target.Name, dd.StreamExecRequest{
			Command: []string{"sh", "-c", "sleep 3600 & sleep 3600 & echo started"}, Stdout: &out,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.String()).To(Equal("started\n"))
		Expect(res.ExitCode).To(BeZero())
		Expect(res.Ended).To(Equal(2), "both sleeps held the output open and were killed")
		Expect(sleepers(ctx)).To(BeZero())
	})

	It("ends the command and its children when the stream is cut", func(ctx SpecContext) {
		cut, cancel := context.WithCancel(ctx)
		in, feed := io.Pipe()
		DeferCleanup(feed.Close)
		done := make(chan error, 1)
		go func() {
			_, err := driver.StreamExec(cut, target.Name, dd.StreamExecRequest{
				Command: []string{"sh", "-c", "sleep 3600 & cat"}, Stdin: in,
			})
			done <- err
		}()
		Eventually(sleepers).WithContext(ctx).WithTimeout(30 * time.Second).Should(Equal(1))
		cancel()
		var err error
		Eventually(done, 30*time.Second).Should(Receive(&err))
		Expect(dd.KindOf(err)).To(Equal(dd.KindUncertain))
		Expect(sleepers(ctx)).To(BeZero(), "the background sleep ended with the exec")
		info, err := driver.ObserveContainer(ctx, target.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateRunning))
	})

	// The data plane starts a terminal's command with its size in the request and passes on what is typed as
	// soon as it comes: the first line typed must read that size, on any daemon (before API 1.42 Docker starts
	// the exec on 0x0, and busybox's stty size then says "stty: standard input").
	It("starts a terminal on the size asked, before anything typed reaches it", func(ctx SpecContext) {
		for i := range 10 {
			resize := make(chan dd.TermSize, 1)
			resize <- dd.TermSize{Width: 100 + uint16(i), Height: 30}
			out := &syncbuffer.Buffer{}
			in, feed := io.Pipe()
			go func() { _, _ = feed.Write([]byte("typed\n")) }() // typed at once, as a client may; open until the end
			res, err := driver.StreamExec(ctx, target.Name, dd.StreamExecRequest{
				Command: []string{"sh", "-c", "read -r line && stty size"}, TTY: true, Stdin: in, Stdout: out, Resize: resize,
			})
			_ = feed.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(res.ExitCode).To(BeZero(), "try %d: %q", i, out.String())
			Expect(out.String()).To(ContainSubstring("30 %d", 100+i), "try %d", i)
		}
	})

	It("gives a terminal of the client's size, and Ctrl-C interrupts its foreground command", func(ctx SpecContext) {
		in, feed := io.Pipe()
		DeferCleanup(feed.Close)
		out := &syncbuffer.Buffer{}
		resize := make(chan dd.TermSize, 1)
		done := make(chan dd.StreamExecResult, 1)
		go func() {
			defer GinkgoRecover()
			res, err := driver.StreamExec(ctx, target.Name, dd.StreamExecRequest{
				Command: []string{"sh"}, TTY: true, Stdin: in, Stdout: out, Resize: resize,
			})
			Expect(err).NotTo(HaveOccurred())
			done <- res
		}()
		// The size is sent again until the shell reports it: one sent before the exec started is dropped.
		Eventually(func() string {
			select {
			case resize <- dd.TermSize{Width: 123, Height: 45}:
			default:
			}
			_, _ = feed.Write([]byte("stty size\n"))
			return out.String()
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(ContainSubstring("45 123"))
		_, err := feed.Write([]byte("sleep 3600\n"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return sleepers(ctx) }).WithTimeout(30 * time.Second).Should(Equal(1))
		_, err = feed.Write([]byte{3}) // Ctrl-C
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { return sleepers(ctx) }).WithTimeout(30 * time.Second).Should(BeZero())
		_, err = feed.Write([]byte("echo interrupted $?\n"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(out.String).WithTimeout(30 * time.Second).Should(ContainSubstring("interrupted 130"))
		_, err = feed.Write([]byte("exit 7\n"))
		Expect(err).NotTo(HaveOccurred())
		var res dd.StreamExecResult
		Eventually(done, 30*time.Second).Should(Receive(&res))
		Expect(res.ExitCode).To(Equal(7))
	})
})

// Docker learns an exec's PID a moment after the command starts, at times after its first output has
// arrived (measured at a load of 22: 10 of 60 execs): a signal sent as soon as the output shows the command
// runs must wait for the PID, not be refused as if the command had ended.
var _ = Describe("StreamExec's signals", func() {
	It("reach a command as soon as its first output arrives", func(ctx SpecContext) {
		target := spec(newOwner("exec-signal"), dsv1alpha1.RolePrimary, "")
		run(ctx, target)
		for i := range 20 {
			up := &firstWrite{seen: make(chan struct{})}
			signals := make(chan dd.Signal)
			exited := make(chan int, 1)
			cmd, cancel := context.WithCancel(ctx)
			DeferCleanup(cancel) // a failed try's command ends with its stream
			go func() {
				res, err := driver.StreamExec(cmd, target.Name, dd.StreamExecRequest{
					Command: []string{"sh", "-c", `trap "exit 7" TERM; echo up; while :; do sleep 1; done`},
					Stdout:  up, Signals: signals,
				})
				if err != nil {
					res.ExitCode = -1
				}
				exited <- res.ExitCode
			}()
			Eventually(up.seen).WithTimeout(time.Minute).Should(BeClosed())
			sent := make(chan error, 1)
			signals <- dd.Signal{Number: syscall.SIGTERM, Done: sent}
			Expect(<-sent).To(Succeed(), "try %d: the command has printed, so it runs", i)
			Eventually(exited).WithTimeout(time.Minute).Should(Receive(Equal(7)), "try %d: its trap ran", i)
		}
	})
})

// firstWrite closes seen at its first write.
type firstWrite struct {
	once sync.Once
	seen chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.seen) })
	return len(p), nil
}
