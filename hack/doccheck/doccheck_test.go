// Package doccheck holds the checks that keep the docs/ book whole: the README stays a short front door, every
// relative link of the Markdown pages leads to a file and heading that exist, and every place the code names a
// section of a page ("docs/api.md, \"Defaults\"") names a page and heading that exist.
package doccheck

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
	heading = regexp.MustCompile(`(?m)^#+ (.+)$`)
	// A bold lead-in (**Bridges.**) names a part of a page as a heading does.
	boldLead = regexp.MustCompile(`\*\*([^*]+?)\.?\*\*`)
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
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

// anchor is GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parts are the headings and bold lead-ins of a page.
func parts(page string) map[string]bool {
	found := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(page, -1) {
		found[strings.TrimSpace(m[1])] = true
	}
	for _, m := range boldLead.FindAllStringSubmatch(page, -1) {
		found[strings.TrimSpace(m[1])] = true
	}
	return found
}

func TestREADMEIsAShortFrontDoor(t *testing.T) {
	if n := len(read(t, "README.md")); n > readmeLimit {
		t.Errorf("README.md holds %d bytes, more than %d: move the detail into docs/", n, readmeLimit)
	}
}

func TestEveryLinkOfTheBookLeadsSomewhere(t *testing.T) {
	pages := tracked(t, "*.md")
	if len(pages) < 10 {
		t.Fatalf("only %d Markdown pages tracked", len(pages))
	}
	for _, page := range pages {
		text := read(t, page)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			info, err := os.Stat(filepath.Join(root, path))
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
				continue
			}
			anchors := map[string]bool{}
			for title := range parts(read(t, path)) {
				anchors[anchor(title)] = true
			}
			if !anchors[frag] {
				t.Errorf("%s links to %s: %s has no heading with that anchor", page, target, path)
			}
		}
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
