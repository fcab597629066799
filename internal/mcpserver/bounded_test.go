package mcpserver

import (
	"strings"
	"testing"
)

func TestBoundedKeepsHeadAndTail(t *testing.T) {
	for _, c := range []struct {
		writes []string
		want   string
	}{
		{[]string{"short"}, "short"},
		{[]string{"0123456789"}, "0123456789"},
		{[]string{"01234", "56789", "abc"}, "01234\n[... 3 bytes left out: the output was 13 bytes, more than the 10 this server returns ...]\n89abc"},
		{[]string{strings.Repeat("a", 5), strings.Repeat("b", 100), "tail!"}, "aaaaa\n[... 100 bytes left out: the output was 110 bytes, more than the 10 this server returns ...]\ntail!"},
	} {
		b := newBounded(10)
		for _, w := range c.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if got := b.String(); got != c.want {
			t.Errorf("%q: %q, want %q", c.writes, got, c.want)
		}
	}
}
