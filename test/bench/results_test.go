package bench

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockside-dev/dockside/test/bench/report"
)

// group and figure are the figures of bench-results.json (test/bench/report), named short for the benchmarks.
type (
	group  = report.Group
	figure = report.Figure
)

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
		g.Figures[i].Ratio = g.Figures[i].DocksideOverBaseline()
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
