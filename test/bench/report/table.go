package report

import (
	"fmt"
	"io"
	"math"
)

// WriteTable prints every group as one Markdown table: a row per figure, the group's title on its first.
func WriteTable(w io.Writer, groups []Group) {
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

// value prints a number with as many decimals as it needs: none for whole numbers, four below 0.1.
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
