package main

import (
	"fmt"
	"regexp"
	"slices"
)

// layoutPage is the package map every package of the module must be in.
const layoutPage = "docs/design/layout.md"

// layoutEntry is a row of layout.md's tables whose first cell names a package: | `internal/agent` | ... |.
var layoutEntry = regexp.MustCompile("(?m)^\\|\\s*`([a-z0-9_./-]+)`\\s*\\|")

// layoutProblems are the packages missing from layout.md and its entries that name no package.
func layoutProblems(pkgs []string, read func(string) (string, error)) ([]string, error) {
	page, err := read(layoutPage)
	if err != nil {
		return nil, fmt.Errorf("read the package map: %w", err)
	}
	listed := map[string]bool{}
	for _, m := range layoutEntry.FindAllStringSubmatch(page, -1) {
		listed[m[1]] = true
	}
	var problems []string
	for _, p := range pkgs {
		if !listed[p] {
			problems = append(problems, fmt.Sprintf("%s: the package %s is missing: add a row | `%s` | what it owns | class |", layoutPage, p, p))
		}
	}
	for _, p := range sortedKeys(listed) {
		if !slices.Contains(pkgs, p) {
			problems = append(problems, fmt.Sprintf("%s: lists %s, which is not a package of this module (go list ./...): remove or rename the row", layoutPage, p))
		}
	}
	return problems, nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
