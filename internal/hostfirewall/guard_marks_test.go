package hostfirewall

import (
	"slices"
	"testing"
)

// The marks are real sockets in the test's own network namespace: two agents' marks are seen, and a closed one
// is gone at once, which is what lets the last agent, and only it, remove the table.
func TestGuardMarksSeeEachOther(t *testing.T) {
	before, err := guardMarks()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newGuardMark()
	if err != nil {
		t.Fatal(err)
	}
	b, err := newGuardMark()
	if err != nil {
		t.Fatal(err)
	}
	marks, _ := guardMarks()
	if !slices.Contains(marks, a.name) || !slices.Contains(marks, b.name) || len(marks) != len(before)+2 {
		t.Fatalf("marks %v, want %s and %s besides %v", marks, a.name, b.name, before)
	}
	a.close()
	if marks, _ = guardMarks(); slices.Contains(marks, a.name) || !slices.Contains(marks, b.name) {
		t.Fatalf("after a closed its mark: %v, want only b's (%s) of the two", marks, b.name)
	}
	b.close()
	if marks, _ = guardMarks(); len(marks) != len(before) {
		t.Fatalf("after both closed: %v, want %v", marks, before)
	}
}
