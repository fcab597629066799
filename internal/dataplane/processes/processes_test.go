package processes

import (
	"bytes"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestOutputKeepsTheLastBytes(t *testing.T) {
	g := NewWithT(t)
	out := NewOutput(8)
	_, _ = out.Write([]byte("hello "))
	data, start, over, _ := out.Since(0)
	g.Expect(string(data)).To(Equal("hello "))
	g.Expect(start).To(BeZero())
	g.Expect(over).To(BeFalse())
	_, _ = out.Write([]byte("world"))
	data, start, _, _ = out.Since(0)
	g.Expect(string(data)).To(Equal("lo world"), "the last 8 bytes")
	g.Expect(start).To(BeEquivalentTo(3), "what was dropped shows in the start offset")
	g.Expect(out.Dropped()).To(BeEquivalentTo(3))
	data, start, _, changed := out.Since(9)
	g.Expect(string(data)).To(Equal("ld"))
	g.Expect(start).To(BeEquivalentTo(9))
	out.Close()
	g.Expect(changed).To(BeClosed())
	data, start, over, _ = out.Since(100)
	g.Expect(data).To(BeEmpty())
	g.Expect(start).To(BeEquivalentTo(11), "past the end is the end")
	g.Expect(over).To(BeTrue())
}

// The ring gives back exactly the last bytes written, whatever the sizes of the writes and wherever they
// wrap, and counts what it dropped.
func TestOutputRingAgreesWithAPlainTail(t *testing.T) {
	g := NewWithT(t)
	const size = 1000
	out := NewOutput(size)
	var all []byte
	for i, n := range []int{1, 7, 500, 499, 2, 999, 1000, 3000, 13, 0, 987, 1} {
		chunk := bytes.Repeat([]byte{byte('a' + i)}, n)
		for j := range chunk {
			chunk[j] += byte(j % 7)
		}
		k, err := out.Write(chunk)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(k).To(Equal(n))
		all = append(all, chunk...)
		kept := all[max(0, len(all)-size):]
		data, start, _, _ := out.Since(0)
		g.Expect(data).To(Equal(kept), "after a write of %d", n)
		g.Expect(start).To(BeEquivalentTo(len(all) - len(kept)))
		g.Expect(out.Dropped()).To(BeEquivalentTo(len(all) - len(kept)))
		g.Expect(out.Total()).To(BeEquivalentTo(len(all)))
		mid := int64(len(all) - len(kept)/2)
		data, start, _, _ = out.Since(mid)
		g.Expect(start).To(Equal(mid))
		g.Expect(data).To(Equal(all[mid:]))
	}
}

// A chatty writer costs one copy of what it writes, not of what is kept: the ring does not move.
func TestOutputWriteDoesNotCopyTheTail(t *testing.T) {
	out := NewOutput(OutputBytes)
	line := bytes.Repeat([]byte("x"), 80)
	for range OutputBytes / len(line) * 2 { // fill the ring first
		_, _ = out.Write(line)
	}
	allocs := testing.AllocsPerRun(1000, func() { _, _ = out.Write(line) })
	if allocs > 1 { // the wake's channel
		t.Fatalf("a write allocates %v times, want at most 1", allocs)
	}
}

func TestTableBounds(t *testing.T) {
	g := NewWithT(t)
	tbl := NewTable()
	uid := types.UID("u1")
	g.Expect(tbl.Add(uid, New("Bad_ID", []string{"true"}, true))).To(MatchError(ContainSubstring("lowercase letters")))
	named := New("web", []string{"true"}, true)
	g.Expect(tbl.Add(uid, named)).To(Succeed())
	g.Expect(tbl.Add(uid, New("web", []string{"true"}, true))).To(MatchError(ContainSubstring(`"web" runs already`)))
	g.Expect(tbl.Add(types.UID("u2"), New("web", []string{"true"}, true))).To(Succeed(), "another Sandbox's names are its own")
	named.Finish(dd.StreamExecResult{}, nil)
	g.Expect(tbl.Add(uid, New("web", []string{"true"}, true))).To(Succeed(), "an ended process gives way to a new one of its name")

	for range MaxPerSandbox - 1 {
		g.Expect(tbl.Add(uid, New("", []string{"sleep"}, true))).To(Succeed())
	}
	g.Expect(tbl.Add(uid, New("", []string{"sleep"}, true))).To(MatchError(ErrConflict))
	g.Expect(tbl.Add(uid, New("", []string{"sleep"}, true))).To(MatchError(ContainSubstring("already runs 16 processes")))
	ended := tbl.List(uid)[3]
	tbl.Get(uid, ended.ID).Finish(dd.StreamExecResult{ExitCode: 1}, nil)
	g.Expect(tbl.Add(uid, New("", []string{"sleep"}, true))).To(Succeed(), "the oldest ended one is forgotten")
	g.Expect(tbl.Get(uid, ended.ID)).To(BeNil())
	g.Expect(tbl.List(uid)).To(HaveLen(MaxPerSandbox))
}

// The outputs of a table keep no more than its budget together: a stream that starts when the budget is
// short keeps the last bytes that fit and counts the rest as dropped; a forgotten process gives its room back.
func TestTableOutputsShareABudget(t *testing.T) {
	g := NewWithT(t)
	tbl := newTable(OutputBytes + 1000)
	uid := types.UID("u1")
	first := New("first", []string{"yes"}, true)
	g.Expect(tbl.Add(uid, first)).To(Succeed())
	_, _ = first.Output("stdout").Write(bytes.Repeat([]byte("a"), 2*OutputBytes))
	g.Expect(first.View()).To(And(HaveField("StdoutBytes", BeEquivalentTo(2*OutputBytes)), HaveField("StdoutDropped", BeEquivalentTo(OutputBytes))))

	second := New("second", []string{"seq"}, true)
	g.Expect(tbl.Add(uid, second)).To(Succeed())
	var all []byte
	for i := range 500 {
		all = fmt.Appendf(all, "%d\n", i)
	}
	_, _ = second.Output("stdout").Write(all[:10])
	_, _ = second.Output("stdout").Write(all[10:])
	data, start, _, _ := second.Output("stdout").Since(0)
	g.Expect(data).To(Equal(all[len(all)-1000:]), "the last 1000 bytes: all the budget had left")
	g.Expect(start).To(BeEquivalentTo(len(all) - 1000))
	g.Expect(second.View().StdoutDropped).To(BeEquivalentTo(len(all) - 1000))
	_, _ = second.Output("stderr").Write([]byte("lost"))
	g.Expect(second.View()).To(And(HaveField("StderrBytes", BeEquivalentTo(4)), HaveField("StderrDropped", BeEquivalentTo(4))), "nothing left to keep it in")

	first.Finish(dd.StreamExecResult{}, nil)
	g.Expect(tbl.Add(uid, New("first", []string{"yes"}, true))).To(Succeed(), "replaces the ended one, which gives its room back")
	third := tbl.Get(uid, "first")
	_, _ = third.Output("stdout").Write(bytes.Repeat([]byte("c"), OutputBytes))
	g.Expect(third.View().StdoutDropped).To(BeZero())
	data, _, _, _ = first.Output("stdout").Since(0)
	g.Expect(data).To(BeEmpty(), "a forgotten process keeps nothing")
}
