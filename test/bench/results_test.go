package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// group is one benchmark's figures, each with its baseline measured in the same run.
type group struct {
	Key      string   `json:"key"`      // short name, prefixing the figures' `go test -bench` units
	Title    string   `json:"title"`    // what was measured, e.g. "Cold start, 20 sequential"
	Baseline string   `json:"baseline"` // what the baseline column is, e.g. "docker run -d + inspect"
	Figures  []figure `json:"figures"`
}

// figure is one number. A nil Dockside value means it could not be measured; Note says why.
type figure struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Dockside *float64 `json:"dockside"`
	Baseline *float64 `json:"baseline,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"` // Dockside over baseline, set by record
	Goal     string   `json:"goal,omitempty"`  // the goal for this figure, for the reader to compare
	Note     string   `json:"note,omitempty"`
}

// ratio is Dockside over baseline, when both were measured.
func (f figure) ratio() *float64 {
	if f.Dockside == nil || f.Baseline == nil || *f.Baseline == 0 {
		return nil
	}
	r := *f.Dockside / *f.Baseline
	return &r
}

func num(v float64) *float64 { return &v }

// notMeasured is a figure whose precondition was missing; benchmarks report that instead of failing.
func notMeasured(name, unit, why string) figure {
	return figure{Name: name, Unit: unit, Note: "not measured: " + why}
}

var results struct {
	sync.Mutex
	groups []group
}

// record keeps a benchmark's figures for the final table and reports them to `go test -bench` as well, so
// that benchstat can compare runs.
func record(b *testing.B, g group) {
	for i := range g.Figures {
		g.Figures[i].Ratio = g.Figures[i].ratio()
	}
	results.Lock()
	results.groups = append(results.groups, g)
	results.Unlock()
	for _, f := range g.Figures {
		if f.Dockside != nil {
			b.ReportMetric(*f.Dockside, metricUnit(g.Key, f))
		}
	}
}

// metricUnit turns a figure into a `go test -bench` unit, which may hold no spaces.
func metricUnit(key string, f figure) string {
	return strings.NewReplacer(" ", "-", "/", "-", ",", "", "(", "", ")", "").Replace(key + ":" + f.Name + "_" + f.Unit)
}

// percentile is the nearest-rank percentile p (0-100) of samples.
func percentile(samples []time.Duration, p float64) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

func seconds(d time.Duration) *float64 { return num(d.Seconds()) }

// writeTable prints every group as one Markdown table, ready to paste into the README's performance section.
func writeTable(w io.Writer, groups []group) {
	fmt.Fprintln(w, "| Benchmark | Figure | Dockside | Plain Docker (baseline) | Ratio | Goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, g := range groups {
		title := g.Title
		if g.Baseline != "" {
			title += " — baseline: " + g.Baseline
		}
		for _, f := range g.Figures {
			dockside := value(f.Dockside, f.Unit)
			switch {
			case f.Dockside == nil:
				dockside = f.Note
			case f.Note != "":
				dockside += " (" + f.Note + ")"
			}
			ratio := ""
			if r := f.Ratio; r != nil {
				ratio = fmt.Sprintf("%.2fx", *r)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", title, f.Name, dockside, value(f.Baseline, f.Unit), ratio, f.Goal)
			title = ""
		}
	}
}

func value(v *float64, unit string) string {
	switch {
	case v == nil:
		return ""
	case *v == math.Trunc(*v) && math.Abs(*v) < 1e6:
		return fmt.Sprintf("%.0f %s", *v, unit)
	case math.Abs(*v) < 0.1:
		return fmt.Sprintf("%.4f %s", *v, unit)
	default:
		return fmt.Sprintf("%.2f %s", *v, unit)
	}
}

// report is bench-results.json: the same figures as the table, with the machine and the command.
type report struct {
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Machine  machine   `json:"machine"`
	Failures []string  `json:"failures,omitempty"`
	Groups   []group   `json:"groups"`
}

func writeJSON(path string, r report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
