package main

import (
	"fmt"
	"path"
	"strings"
)

// An index is a page that must link to every file of a folder: the book's pages and the decision records.
type index struct {
	page   string // the index page
	folder string // the folder whose every .md file it links to, other than the index itself
	what   string // what the files are, for the message
}

var indexes = []index{
	{page: "docs/README.md", folder: "docs", what: "page"},
	{page: "docs/design/README.md", folder: "docs/design", what: "design page"},
	{page: "docs/design/README.md", folder: "docs/design/decisions", what: "decision record"},
}

// indexProblems are the tracked Markdown files of each index's folder that its index does not link to.
func indexProblems(files []string, read func(string) (string, error)) ([]string, error) {
	var problems []string
	for _, ix := range indexes {
		text, err := read(ix.page)
		if err != nil {
			return nil, fmt.Errorf("read the index %s: %w", ix.page, err)
		}
		linked := map[string]bool{}
		for _, target := range links(text) {
			file, _, _ := strings.Cut(target, "#")
			linked[path.Join(path.Dir(ix.page), file)] = true
		}
		for _, f := range files {
			if path.Dir(f) != ix.folder || path.Ext(f) != ".md" || f == ix.page || linked[f] {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: the %s %s is missing from its index: add a row linking to it", ix.page, ix.what, f))
		}
	}
	return problems, nil
}
