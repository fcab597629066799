package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestImportRules fails once for every import of a non-test file that breaks a rule of importRules.
func TestImportRules(t *testing.T) {
	for _, pkg := range listPackages(t) {
		for _, rule := range importRules {
			for _, imp := range pkg.Imports {
				if rule.breaks(pkg.ImportPath, imp) {
					t.Errorf("%s imports %s: %s", short(pkg.ImportPath), short(imp), rule.why)
				}
			}
		}
	}
}

// TestImportRulesAreNotVacuous guards the table against rules that cannot fail: a misspelt package or a
// Docker SDK path that nothing imports would make TestImportRules pass whatever the code does.
func TestImportRulesAreNotVacuous(t *testing.T) {
	pkgs := listPackages(t)
	t.Run("the driver imports the Docker SDK and is used", func(t *testing.T) {
		var driverUsesSDK, driverUsed bool
		for _, pkg := range pkgs {
			for _, imp := range pkg.Imports {
				driverUsesSDK = driverUsesSDK || pkg.ImportPath == dockerdriver && underAny(imp, dockerSDK)
				driverUsed = driverUsed || imp == dockerdriver && !under(pkg.ImportPath, dockerdriver)
			}
		}
		if !driverUsesSDK {
			t.Errorf("%s is missing or imports nothing under %v: the Docker rule checks nothing", dockerdriver, dockerSDK)
		}
		if !driverUsed {
			t.Errorf("no package outside %s imports it: the package list is not the agent's", dockerdriver)
		}
	})
	for _, prefix := range namedPackages() {
		t.Run(short(prefix), func(t *testing.T) {
			if !matches(pkgs, prefix) {
				t.Errorf("the import rules name %s, but no package is there: fix the table in rules_test.go", prefix)
			}
		})
	}
	t.Run("every reconciler is apart from the others", func(t *testing.T) {
		var reconcilers []string
		for _, pkg := range pkgs {
			if under(pkg.ImportPath, controllers) && pkg.ImportPath != controllers {
				reconcilers = append(reconcilers, pkg.ImportPath)
			}
		}
		for _, r := range []string{sandbox, execution, checkpoint, sandboxservice, nodelifecycle} {
			if !slices.Contains(reconcilers, r) {
				t.Errorf("%s is not among the packages under %s (%v): the apart rule misses it", short(r), short(controllers), reconcilers)
			}
		}
	})
}

// breaks tells whether importer importing imp goes against the rule.
func (r importRule) breaks(importer, imp string) bool {
	if !under(importer, r.importers) || underAny(importer, r.allowed) {
		return false
	}
	if r.apart && under(imp, r.importers) && room(importer, r.importers) != room(imp, r.importers) {
		return true
	}
	for _, f := range r.forbidden {
		if under(imp, f) && !under(importer, f) {
			return true
		}
	}
	return false
}

// room is the first path element of path below prefix ("sandbox" for internal/controller/sandbox/x), "" for
// prefix itself.
func room(path, prefix string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(path, prefix), "/")
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// namedPackages is every prefix inside the module that the table mentions, each once.
func namedPackages() []string {
	seen := map[string]bool{}
	var names []string
	for _, rule := range importRules {
		for _, p := range append(append([]string{rule.importers}, rule.forbidden...), rule.allowed...) {
			if under(p, module) && !seen[p] {
				seen[p] = true
				names = append(names, p)
			}
		}
	}
	return names
}

// goPackage is the part of `go list -json` the rules read. Imports lists the package's non-test files'
// imports only (TestImports and XTestImports hold the tests').
type goPackage struct {
	ImportPath string
	Imports    []string
}

// listPackages is every package of the module, including the test tiers' (build tags integration and e2e).
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	pkgs, err := loadPackages()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

// loadPackages runs go list once per test binary. -e keeps a package that does not compile in the list,
// with the imports it has.
var loadPackages = sync.OnceValues(func() ([]goPackage, error) {
	cmd := exec.Command("go", "list", "-e", "-tags", "integration,e2e", "-json=ImportPath,Imports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.Join(err, errors.New(stderr.String()))
	}
	return decodePackages(out)
})

// decodePackages reads the stream of JSON objects that `go list -json` prints.
func decodePackages(out []byte) ([]goPackage, error) {
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// under tells whether path is prefix or inside it, by whole path elements.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func underAny(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(path, p) {
			return true
		}
	}
	return false
}

func matches(pkgs []goPackage, prefix string) bool {
	for _, p := range pkgs {
		if under(p.ImportPath, prefix) {
			return true
		}
	}
	return false
}

// short is an import path without the module's, for messages.
func short(path string) string {
	return strings.TrimPrefix(path, module+"/")
}
