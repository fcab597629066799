package main

import (
	"context"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestCopyInRefusesAPipeOrASocketAtOnce: a local named pipe with no writer would block its open for ever; it
// and a socket are refused with what they are, and nothing is sent.
func TestCopyInRefusesAPipeOrASocketAtOnce(t *testing.T) {
	g, ctx, c := NewWithT(t), context.Background(), filesServer(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	g.Expect(syscall.Mkfifo(fifo, 0o600)).To(Succeed())
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()

	done := make(chan error, 1)
	go func() {
		done <- copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/workspace/", local: fifo})
	}()
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(MatchError(ContainSubstring("a named pipe (FIFO)"))))
	g.Expect(copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/workspace/", local: sock})).
		To(MatchError(ContainSubstring("a socket")))
	_, err = c.stat(ctx, "/workspace/fifo")
	g.Expect(isNotFound(err)).To(BeTrue(), "nothing was sent: %v", err)

	g.Expect(copyIn(ctx, c, copyRequest{in: true, sandbox: "box", remote: "/workspace/d", local: dir})).To(Succeed())
	_, err = c.stat(ctx, "/workspace/d/fifo")
	g.Expect(isNotFound(err)).To(BeTrue(), "a directory's pipe is left out: %v", err)
}
