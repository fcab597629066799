// Package report is the format of bench-results.json, which `make bench` (test/bench) writes and
// `make perfdoc` (hack/perfdoc) turns into docs/performance.md, and the Markdown table both print.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Report is bench-results.json: the figures of one run, with the machine, the commit and the command.
type Report struct {
	Command string    `json:"command"`
	Commit  string    `json:"commit"` // git describe --always --dirty of the tree the run measured
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Machine Machine   `json:"machine"`
	// Note says what a reader must know about the run that the figures do not show.
	Note     string   `json:"note,omitempty"`
	Failures []string `json:"failures,omitempty"`
	Groups   []Group  `json:"groups"`
}

// Machine is what the figures were measured on.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpuModel"`
	MemoryMiB float64 `json:"memoryMiB"`
	Kernel    string  `json:"kernel"`
	Docker    string  `json:"docker"`
	Go        string  `json:"go"`
	// The machine may be shared: the load averages (1, 5, 15 minutes) say how busy it was.
	LoadAvgStart string `json:"loadAverageAtStart"`
	LoadAvgEnd   string `json:"loadAverageAtEnd"`
}

// Group is one benchmark's figures, each with its baseline measured in the same run.
type Group struct {
	Key      string   `json:"key"`      // short name, prefixing the figures' `go test -bench` units
	Title    string   `json:"title"`    // what was measured, e.g. "Cold start, 20 sequential"
	Baseline string   `json:"baseline"` // what the baseline column is, e.g. "docker run -d + inspect"
	Figures  []Figure `json:"figures"`
}

// Figure is one number. A nil Dockside value means it could not be measured; Note says why.
type Figure struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Dockside *float64 `json:"dockside"`
	Baseline *float64 `json:"baseline,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"` // Dockside over baseline, set by the benchmark that records it
	Goal     string   `json:"goal,omitempty"`  // the goal for this figure, for the reader to compare
	Note     string   `json:"note,omitempty"`
}

// DocksideOverBaseline is the figure's ratio, when both sides were measured.
func (f Figure) DocksideOverBaseline() *float64 {
	if f.Dockside == nil || f.Baseline == nil || *f.Baseline == 0 {
		return nil
	}
	r := *f.Dockside / *f.Baseline
	return &r
}

// Write stores r at path as indented JSON.
func Write(path string, r Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the bench results: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the bench results: %w", err)
	}
	return nil
}

// Read loads the report at path, refusing one without figures.
func Read(path string) (Report, error) {
	var r Report
	data, err := os.ReadFile(path)
	if err != nil {
		return r, fmt.Errorf("read the bench results: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Groups) == 0 {
		return r, fmt.Errorf("%s holds no benchmark figures", path)
	}
	return r, nil
}
