// These tests check the repository itself, beside the command's checks: the README stays a short front door,
// and every place the code or the book names a section of a page ("docs/api.md, \"Defaults\"") names a page
// and heading that exist.
package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's top folder, from this package's.
var root = filepath.Join("..", "..")

// readmeLimit is the most bytes the README may hold: a front door, the rest in docs/.
const readmeLimit = 12 * 1024

var (
	// docs/<page>.md, "Section" or docs/<page>.md ("Section"), the quote possibly escaped and the section possibly
	// broken over two comment lines.
	sectionRef = regexp.MustCompile(`(docs/[\w/.-]+\.md)(?:,?[ \t]+|,|,?[ \t]*\n[ \t]*(?://|#)[ \t]*)\(?\\?"` +
		`([^"\\\n]+(?:\n[ \t]*(?://|#)[ \t]*[^"\\\n]+)?)\\?"`)
	commentGap = regexp.MustCompile(`\s*(//|#)\s*|\s+`)
)

// tracked lists the repository's files that git tracks, matching the patterns.
func tracked(t *testing.T, patterns ...string) []string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", root, "ls-files", "--"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	return strings.Fields(string(out))
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestREADMEIsAShortFrontDoor(t *testing.T) {
	if n := len(read(t, "README.md")); n > readmeLimit {
		t.Errorf("README.md holds %d bytes, more than %d: move the detail into docs/", n, readmeLimit)
	}
}

func TestEverySectionTheCodeNamesExists(t *testing.T) {
	files := tracked(t, "*.go", "*.py", "*.sh", "*.yaml", "*.json", "*.md", "Makefile")
	refs := 0
	for _, file := range files {
		for _, m := range sectionRef.FindAllStringSubmatch(read(t, file), -1) {
			page, section := m[1], commentGap.ReplaceAllString(m[2], " ")
			refs++
			if _, err := os.Stat(filepath.Join(root, page)); err != nil {
				t.Errorf("%s names %s, which does not exist", file, page)
				continue
			}
			if !parts(read(t, page))[section] {
				t.Errorf("%s names the section %q of %s, which has no such heading", file, section, page)
			}
		}
	}
	if refs == 0 {
		t.Error("found no reference to a section of docs/: the pattern no longer matches how the code names them")
	}
}

// bookRef is a page's link followed by the section it means: [deploy.md](deploy.md), "Who may do what".
var bookRef = regexp.MustCompile(`\]\(([^)#\s]+\.md)\),?\s*\(?"([^"]+)"`)

func TestEverySectionTheBookNamesExists(t *testing.T) {
	refs := 0
	for _, page := range tracked(t, "*.md") {
		for _, m := range bookRef.FindAllStringSubmatch(read(t, page), -1) {
			target, section := filepath.Join(filepath.Dir(page), m[1]), strings.Join(strings.Fields(m[2]), " ")
			refs++
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				continue // the link test reports it
			}
			if !parts(read(t, target))[section] {
				t.Errorf("%s names the section %q of %s, which has no such heading", page, section, target)
			}
		}
	}
	if refs == 0 {
		t.Error("found no page naming a section of another: the pattern no longer matches how the book names them")
	}
}
