package bench

import (
	"math"
	"os"
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

// The paired ratio is the median of on/off over the pairs; its interval holds it, narrows to it when every
// pair agrees, and widens, within the pairs' spread, when they do not.
func TestPairedRatioIsTheMedianWithItsInterval(t *testing.T) {
	off := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second}
	on := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second}
	if m, low, high := pairedRatio(on, off); m != 1 || low != 1 || high != 1 {
		t.Errorf("equal pairs: %v in [%v, %v], want 1 in [1, 1]", m, low, high)
	}
	var noisyOn, noisyOff []time.Duration
	for i := range 40 {
		d := time.Duration(500+100*(i%7)) * time.Millisecond // each pair's own load, the same for both of it
		noisyOff = append(noisyOff, d)
		noisyOn = append(noisyOn, d*time.Duration(100+i%5-1)/100) // 0.99x to 1.03x
	}
	m, low, high := pairedRatio(noisyOn, noisyOff)
	if math.Abs(m-1.01) > 1e-9 || low > m || high < m || low < 0.99 || high > 1.03 || low == high {
		t.Errorf("noisy pairs: %v in [%v, %v], want 1.01 inside an interval within [0.99, 1.03]", m, low, high)
	}
}

func TestIdleCostSizesReadTheEnvironment(t *testing.T) {
	t.Setenv(idleCostSandboxesEnv, "100, 200")
	t.Setenv(idleCostWindowEnv, "60s")
	counts, window, err := idleCostSizes()
	if err != nil || len(counts) != 2 || counts[0] != 100 || counts[1] != 200 || window != time.Minute {
		t.Errorf("idleCostSizes() = %v, %v, %v; want [100 200], 1m0s", counts, window, err)
	}
	for _, bad := range []string{"200,100", "0", "ten"} {
		t.Setenv(idleCostSandboxesEnv, bad)
		if _, _, err := idleCostSizes(); err == nil {
			t.Errorf("%s=%q was accepted", idleCostSandboxesEnv, bad)
		}
	}
}

// The CPU time of a process is read from its stat line past the command name, which may hold spaces.
func TestProcessCPUReadsThisProcess(t *testing.T) {
	// Spend CPU until a tick of it shows, however loaded the machine.
	for start := time.Now(); processCPU(os.Getpid()) <= 0; {
		if time.Since(start) > time.Minute {
			t.Fatalf("processCPU(self) = %v after a minute of spinning, want the CPU time this test spent", processCPU(os.Getpid()))
		}
		for range 1_000_000 {
			_ = math.Sqrt(float64(time.Now().UnixNano()))
		}
	}
	if got := processCPU(-1); got != -1 {
		t.Errorf("processCPU(-1) = %v, want -1", got)
	}
}

// A difference of two readings, and their total, are unread (-1) where a reading they need is.
func TestHostUseSinceAndTotalKeepUnreadFigures(t *testing.T) {
	before := hostUse{daemon: 10, shims: -1, agent: 1, containers: 5}
	after := hostUse{daemon: 14, shims: 3, agent: -1, containers: 9}
	if got, want := after.since(before), (hostUse{daemon: 4, shims: -1, agent: -1, containers: 4}); got != want {
		t.Errorf("since = %+v, want %+v", got, want)
	}
	if got := after.total(); got != 26 {
		t.Errorf("total = %v, want 26 (an unread agent counts 0)", got)
	}
	if got := before.total(); got != -1 {
		t.Errorf("total with unread shims = %v, want -1", got)
	}
}
