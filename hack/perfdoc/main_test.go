package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var (
	resultsFile = filepath.Join("..", "..", "docs", "bench-results.json")
	performance = filepath.Join("..", "..", "docs", "performance.md")
)

func TestPerformancePageIsWhatTheResultsFileGives(t *testing.T) {
	page, err := os.ReadFile(performance)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(resultsFile, string(page))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(page) {
		t.Errorf("%s differs from what %s gives: run `make perfdoc` (after `make bench`) and commit both", performance, resultsFile)
	}
	if !strings.Contains(want, "| Benchmark | Figure |") {
		t.Errorf("%s shows no table", performance)
	}
}

func TestSpliceReplacesOnlyWhatLiesBetweenTheMarkers(t *testing.T) {
	page := "# Performance\n\nmethod\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\nafter\n"
	got, err := splice(page, "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Performance\n\nmethod\n\n" + beginMarker + "\nnew table\n" + endMarker + "\n\nafter\n"; got != want {
		t.Errorf("spliced page:\n%s\nwant:\n%s", got, want)
	}
}

func TestSpliceRefusesAPageWithoutItsMarkersInOrder(t *testing.T) {
	for name, page := range map[string]string{
		"none":     "# Performance\n",
		"no end":   beginMarker + "\n",
		"reversed": endMarker + "\n" + beginMarker + "\n",
		"twice":    beginMarker + "\n" + endMarker + "\n" + beginMarker + "\n" + endMarker + "\n",
	} {
		if _, err := splice(page, "table\n"); err == nil {
			t.Errorf("%s: a page with markers %s was accepted", name, name)
		}
	}
}
