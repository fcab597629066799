package main

import (
	"bytes"
	"fmt"
	"path/filepath"
)

const (
	// maxFileSize is the most bytes a tracked file may hold: built outputs, archives and data belong outside
	// the repository.
	maxFileSize = 1 << 20
	// sniffLen is how much of a file is read to tell text from binary, as git itself does.
	sniffLen = 8000
)

// allowed names the tracked files that may be large or binary, each with why. None needs to be today.
var allowed = map[string]string{}

// fileProblems are the tracked files under root that are too large or not text.
func fileProblems(root string, files []string) ([]string, error) {
	var problems []string
	for _, f := range files {
		head, size, err := readHead(filepath.Join(root, f), sniffLen)
		if err != nil {
			return nil, err
		}
		problems = append(problems, fileProblem(f, head, size)...)
	}
	return problems, nil
}

// fileProblem is what is wrong with one tracked file, given its first bytes and its size.
func fileProblem(name string, head []byte, size int64) []string {
	if _, ok := allowed[name]; ok {
		return nil
	}
	var problems []string
	if size > maxFileSize {
		problems = append(problems, fmt.Sprintf("%s holds %d bytes, more than %d: keep built outputs and data out of git", name, size, maxFileSize))
	}
	if bytes.IndexByte(head, 0) >= 0 {
		problems = append(problems, fmt.Sprintf("%s is not text (a NUL byte in its first %d bytes): keep binaries out of git", name, sniffLen))
	}
	return problems
}
