package dockerdriver

import (
	"testing"

	. "github.com/onsi/gomega"
)

// The size a terminal starts on is the one its request already holds, taken off the channel so that the
// resizes after it are not applied twice; a channel with none yet (kubectl's resize stream) starts none.
func TestFirstSize(t *testing.T) {
	g := NewWithT(t)
	sizes := make(chan TermSize, 1)
	sizes <- TermSize{Width: 100, Height: 30}
	first := firstSize(StreamExecRequest{TTY: true, Resize: sizes})
	g.Expect(first).To(Equal(&TermSize{Width: 100, Height: 30}))
	g.Expect(sizes).To(BeEmpty())
	g.Expect(consoleSizeOf(first)).To(Equal(&[2]uint{30, 100}), "Docker's ConsoleSize is [height, width]")

	g.Expect(firstSize(StreamExecRequest{TTY: true, Resize: make(chan TermSize)})).To(BeNil())
	g.Expect(firstSize(StreamExecRequest{TTY: true})).To(BeNil())
	g.Expect(consoleSizeOf(nil)).To(BeNil())
	closed := make(chan TermSize)
	close(closed)
	g.Expect(firstSize(StreamExecRequest{TTY: true, Resize: closed})).To(BeNil())
}
