package bench

import (
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
