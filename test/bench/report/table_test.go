package report

import (
	"strings"
	"testing"
)

func TestTableShowsRatiosAndWhatWasNotMeasured(t *testing.T) {
	three, half := 3.0, 1.5
	g := Group{Key: "k", Title: "Cold start", Baseline: "docker run", Figures: []Figure{
		{Name: "p50", Unit: "s", Dockside: &three, Baseline: &half},
		{Name: "capture", Unit: "s", Note: "not measured: checkpoint controller missing"},
	}}
	for i := range g.Figures {
		g.Figures[i].Ratio = g.Figures[i].DocksideOverBaseline()
	}
	var out strings.Builder
	WriteTable(&out, []Group{g})
	for _, want := range []string{
		"| Cold start — baseline: docker run | p50 | 3 s | 1.50 s | 2.00x |",
		"|  | capture | not measured: checkpoint controller missing |  |  |  |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
