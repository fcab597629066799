// Command doccheck keeps the docs/ book whole and the tracked tree plain (`make lint` runs it from the
// repository's top folder): every Go package of the module is in docs/design/layout.md and every package
// there exists, every decision record is in the index of docs/design/README.md, every page is in its
// folder's index, every relative Markdown link leads to a file and heading that exist, and no tracked file is
// over 1 MB or binary. It prints one line per problem and exits 1 if there is any.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

func main() {
	problems, err := check(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "doccheck:", p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "doccheck: %d problems\n", len(problems))
		os.Exit(1)
	}
}

// check runs every check on the repository at root.
func check(root string) ([]string, error) {
	files, err := gitFiles(root)
	if err != nil {
		return nil, err
	}
	pkgs, err := goPackages(root)
	if err != nil {
		return nil, err
	}
	read := func(path string) (string, error) {
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return "", fmt.Errorf("reading the file: %w", err)
		}
		return string(data), nil
	}
	exists := func(path string) bool {
		_, err := os.Stat(filepath.Join(root, path))
		return err == nil
	}
	var problems []string
	for _, c := range []func() ([]string, error){
		func() ([]string, error) { return layoutProblems(pkgs, read) },
		func() ([]string, error) { return indexProblems(files, read) },
		func() ([]string, error) { return linkProblems(files, read, exists) },
		func() ([]string, error) { return fileProblems(root, files) },
	} {
		found, err := c()
		if err != nil {
			return nil, err
		}
		problems = append(problems, found...)
	}
	return problems, nil
}

// gitFiles lists the files git tracks under root, relative to it, as `git ls-files` prints them.
func gitFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	return strings.FieldsFunc(string(out), func(r rune) bool { return r == 0 }), nil
}

// goPackages lists the module's packages relative to the module's path, the test tiers' (build tags
// integration and e2e) included.
func goPackages(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-tags", "integration,e2e", "-f", "{{.ImportPath}} {{.Module.Path}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, module, _ := strings.Cut(line, " ")
		pkgs = append(pkgs, strings.TrimPrefix(strings.TrimPrefix(path, module), "/"))
	}
	return pkgs, nil
}

// readHead is the first n bytes of a file (fewer if it is shorter) and its size.
func readHead(path string, n int) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("a tracked file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("a tracked file's size: %w", err)
	}
	head, err := io.ReadAll(io.LimitReader(f, int64(n)))
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", path, err)
	}
	return head, info.Size(), nil
}
