package bench

import (
	"strings"
	"testing"
	"time"
)

// These check the arithmetic and parsing the figures rest on; they run with a plain `go test`, without
// Docker or a control plane.

func TestPercentileIsNearestRank(t *testing.T) {
	var samples []time.Duration
	for i := 20; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Second)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 10 * time.Second}, {95, 19 * time.Second}, {100, 20 * time.Second}, {1, time.Second}} {
		if got := percentile(samples, tc.p); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.p, got, tc.want)
		}
	}
	if samples[0] != 20*time.Second {
		t.Error("percentile reordered its input")
	}
}

func TestParseBytesReadsDockerSizes(t *testing.T) {
	for in, want := range map[string]float64{"1.5MiB": 1.5 * (1 << 20), "532KiB": 532 << 10, "0B": 0, "2GiB": 2 << 30, "3kB": 3000} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseBytes("12 parsecs"); err == nil {
		t.Error("an unknown unit was accepted")
	}
}

func TestTableShowsRatiosAndWhatWasNotMeasured(t *testing.T) {
	g := group{Key: "k", Title: "Cold start", Baseline: "docker run", Figures: []figure{
		{Name: "p50", Unit: "s", Dockside: num(3), Baseline: num(1.5)},
		notMeasured("capture", "s", "checkpoint controller missing"),
	}}
	for i := range g.Figures {
		g.Figures[i].Ratio = g.Figures[i].ratio()
	}
	var out strings.Builder
	writeTable(&out, []group{g})
	for _, want := range []string{
		"| Cold start — baseline: docker run | p50 | 3 s | 1.50 s | 2.00x |",
		"|  | capture | not measured: checkpoint controller missing |  |  |  |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
