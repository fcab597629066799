package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeTree is a repository of files held in memory, for the checks' read and exists.
type fakeTree map[string]string

func (f fakeTree) read(path string) (string, error) {
	text, ok := f[path]
	if !ok {
		return "", fmt.Errorf("%s: no such file", path)
	}
	return text, nil
}

func (f fakeTree) exists(path string) bool {
	_, ok := f[path]
	return ok
}

func (f fakeTree) files() []string {
	var names []string
	for name := range f {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// wantProblems fails unless got holds one problem per wanted substring, each matching its own.
func wantProblems(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("problem %d is %q, want it to mention %q", i, got[i], w)
		}
	}
}

func TestLayoutNamesEveryPackageAndNoOther(t *testing.T) {
	tree := fakeTree{layoutPage: "# Layout\n\n| Package | Owns |\n|---|---|\n" +
		"| `internal/agent` | wiring |\n| `internal/gone` | renamed away |\n" +
		"Prose naming `internal/status` is not an entry.\n"}
	got, err := layoutProblems([]string{"internal/agent", "internal/status"}, tree.read)
	if err != nil {
		t.Fatal(err)
	}
	wantProblems(t, got, "the package internal/status is missing", "lists internal/gone, which is not a package")
}

func TestIndexesLinkEveryPageAndRecord(t *testing.T) {
	tree := fakeTree{
		"docs/README.md":                    "[api.md](api.md) and [design](design/README.md)",
		"docs/api.md":                       "",
		"docs/unlisted.md":                  "",
		"docs/design/README.md":             "[overview.md](overview.md#the-agent), [0001](decisions/0001-one.md)",
		"docs/design/overview.md":           "",
		"docs/design/paths.md":              "",
		"docs/design/decisions/0001-one.md": "",
		"docs/design/decisions/0002-two.md": "",
		"docs/design/notes.txt":             "",
	}
	got, err := indexProblems(tree.files(), tree.read)
	if err != nil {
		t.Fatal(err)
	}
	wantProblems(t, got, "page docs/unlisted.md is missing", "design page docs/design/paths.md is missing",
		"decision record docs/design/decisions/0002-two.md is missing")
}

func TestLinksLeadToFilesAndHeadings(t *testing.T) {
	tree := fakeTree{
		"README.md":      "[book](docs/README.md) [site](https://example.invalid/x.md) [mail](mailto:a@b)",
		"docs/README.md": "[gone](gone.md) [ok](api.md#the-four-kinds) [bad](api.md#nowhere) [self](#the-book) [code](../cmd/main.go)",
		"docs/api.md":    "# API\n\n## The four kinds\n\n**Defaults.** Bold lead-ins count as headings.\n",
		"cmd/main.go":    "package main",
	}
	got, err := linkProblems(tree.files(), tree.read, tree.exists)
	if err != nil {
		t.Fatal(err)
	}
	wantProblems(t, got, "docs/README.md links to gone.md, which does not exist",
		"docs/README.md links to api.md#nowhere: docs/api.md has no heading", "links to #the-book")
}

func TestAnchorIsGitHubs(t *testing.T) {
	for title, want := range map[string]string{
		"The four kinds":         "the-four-kinds",
		"`make run`'s PKI":       "make-runs-pki",
		"Paths: (a) an exec, 15": "paths-a-an-exec-15",
	} {
		if got := anchor(title); got != want {
			t.Errorf("anchor(%q) = %q, want %q", title, got, want)
		}
	}
}

func TestLargeAndBinaryFilesAreRefused(t *testing.T) {
	wantProblems(t, fileProblem("go.sum", []byte("text\n"), 45_000))
	wantProblems(t, fileProblem("bin/agent", []byte("\x7fELF\x00\x01"), 84<<20),
		"holds 88080384 bytes, more than 1048576", "bin/agent is not text")
	wantProblems(t, fileProblem("data.json", []byte("{}"), maxFileSize+1), "data.json holds")
	wantProblems(t, fileProblem("logo.png", []byte("\x89PNG\x00"), 100), "logo.png is not text")
}
