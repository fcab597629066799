package main

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

var (
	heading = regexp.MustCompile(`(?m)^#+ (.+)$`)
	// A bold lead-in (**Bridges.**) names a part of a page as a heading does.
	boldLead = regexp.MustCompile(`\*\*([^*]+?)\.?\*\*`)
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// links are the targets of a page's Markdown links.
func links(page string) []string {
	var targets []string
	for _, m := range mdLink.FindAllStringSubmatch(page, -1) {
		targets = append(targets, m[1])
	}
	return targets
}

// linkProblems are the relative links of the tracked Markdown pages that lead to no file, or to no heading of
// the page they name.
func linkProblems(files []string, read func(string) (string, error), exists func(string) bool) ([]string, error) {
	var problems []string
	for _, page := range files {
		if path.Ext(page) != ".md" {
			continue
		}
		text, err := read(page)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", page, err)
		}
		for _, target := range links(text) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = path.Join(path.Dir(page), file)
			}
			if !exists(dest) {
				problems = append(problems, fmt.Sprintf("%s links to %s, which does not exist", page, target))
				continue
			}
			if frag == "" || path.Ext(dest) != ".md" {
				continue
			}
			destText, err := read(dest)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", dest, err)
			}
			if !hasAnchor(destText, frag) {
				problems = append(problems, fmt.Sprintf("%s links to %s: %s has no heading with that anchor", page, target, dest))
			}
		}
	}
	return problems, nil
}

func hasAnchor(page, frag string) bool {
	for title := range parts(page) {
		if anchor(title) == frag {
			return true
		}
	}
	return false
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
