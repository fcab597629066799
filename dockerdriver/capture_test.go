package dockerdriver

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestHeadBufferKeepsTheFirstBytesAndCountsTheRest(t *testing.T) {
	g := NewWithT(t)
	h := &headBuffer{limit: 5}
	for _, w := range []string{"abc", "defg", "hij"} {
		n, err := h.Write([]byte(w))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(Equal(len(w)), "the writer never blocks or fails, so the command never stalls")
	}
	g.Expect(string(h.buf)).To(Equal("abcde"))
	g.Expect(h.cut).To(Equal(int64(5)))
}

func TestTailBufferKeepsTheLastBytesAndCountsTheCut(t *testing.T) {
	cases := []struct {
		writes []string
		want   string
		cut    int64
	}{
		{[]string{"abc"}, "abc", 0},
		{[]string{"abc", "de"}, "abcde", 0},
		{[]string{"abc", "def"}, "bcdef", 1},
		{[]string{"abcdefgh"}, "defgh", 3},
		{[]string{"ab", "cdefghij"}, "fghij", 5},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "cdefg", 2},
	}
	for _, c := range cases {
		g := NewWithT(t)
		tb := &tailBuffer{limit: 5}
		for _, w := range c.writes {
			_, _ = tb.Write([]byte(w))
		}
		g.Expect(string(tb.buf)).To(Equal(c.want), "%v", c.writes)
		g.Expect(tb.cut).To(Equal(c.cut), "%v", c.writes)
	}
}

func TestTailBufferStaysBounded(t *testing.T) {
	g := NewWithT(t)
	tb := &tailBuffer{limit: 1024}
	chunk := []byte(strings.Repeat("x", 100))
	for range 10000 {
		_, _ = tb.Write(chunk)
	}
	g.Expect(tb.buf).To(HaveLen(1024))
	g.Expect(cap(tb.buf)).To(BeNumerically("<=", 4096))
	g.Expect(tb.cut).To(Equal(int64(10000*100 - 1024)))
}
