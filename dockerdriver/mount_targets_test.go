package dockerdriver

import (
	"slices"
	"testing"
)

func TestLeadingPartsWalksFromTheRootDown(t *testing.T) {
	for p, want := range map[string][]string{
		"/workspace":  {"/workspace"},
		"/a/b/c":      {"/a", "/a/b", "/a/b/c"},
		"/work/x.y/z": {"/work", "/work/x.y", "/work/x.y/z"},
	} {
		if got := leadingParts(p); !slices.Equal(got, want) {
			t.Errorf("leadingParts(%q) = %q, want %q", p, got, want)
		}
	}
}
