//go:build e2e

package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// A CI log is read from its end, where Ginkgo's summary names a failed spec's location and nothing else; the
// spec's own output and the agents' logs are 20 minutes further up, or gone with the test's files. The digest
// below repeats, for each failed spec, what a person needs to fix it from the log's end alone: the failure,
// the spec's last lines of output and the agents' log lines of the spec's time. It is printed after every spec,
// right before Ginkgo's summary.

const (
	digestOutputLines = 20  // of the spec's own output, the last ones before any log dump
	digestAgentLines  = 30  // of the agents' logs in the spec's time: errors first, then the last lines
	digestLineChars   = 400 // a longer line is cut: a log line can carry a whole object
	slowestSpecs      = 12
)

var (
	digestMu sync.Mutex
	// agentLogs are the log files of every agent the suite started, the suite's own and the specs'.
	agentLogs []string
	digests   []string
)

// noteAgentLog adds an agent's log to those a failure's digest reads.
func noteAgentLog(path string) {
	digestMu.Lock()
	defer digestMu.Unlock()
	agentLogs = append(agentLogs, path)
}

var _ = ReportAfterEach(func(r SpecReport) {
	if !r.Failed() {
		return
	}
	digestMu.Lock()
	defer digestMu.Unlock()
	digests = append(digests, failureDigest(r, agentLogs))
})

var _ = ReportAfterSuite("failure digest", func(r Report) {
	digestMu.Lock()
	defer digestMu.Unlock()
	fmt.Fprint(os.Stdout, slowest(r.SpecReports, slowestSpecs))
	for _, d := range digests {
		fmt.Fprint(os.Stdout, d)
	}
})

// slowest lists the n longest specs with their times: where the suite's time goes, read from a CI log.
func slowest(specs types.SpecReports, n int) string {
	specs = specs.WithLeafNodeType(types.NodeTypeIt).WithState(types.SpecStatePassed | types.SpecStateFailureStates)
	slices.SortFunc(specs, func(a, b types.SpecReport) int { return cmp.Compare(b.RunTime, a.RunTime) })
	var b strings.Builder
	fmt.Fprintf(&b, "\n==== the %d slowest specs\n", min(n, len(specs)))
	for _, s := range specs[:min(n, len(specs))] {
		fmt.Fprintf(&b, "  %6.1fs  %s\n", s.RunTime.Seconds(), s.FullText())
	}
	return b.String()
}

// failureDigest is one failed spec's digest.
func failureDigest(r SpecReport, logs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n==== FAILED: %s\n  at %s (%s)\n", r.FullText(), r.FailureLocation(), r.State)
	for _, path := range logs {
		lines := agentLinesOf(path, r.StartTime.Add(-time.Second), r.EndTime)
		if len(lines) > 0 {
			writeLines(&b, "agent log "+path+", the spec's time", lines, digestAgentLines)
		}
	}
	writeLines(&b, "spec output, last lines", lastLines(specOutput(r.CapturedGinkgoWriterOutput), digestOutputLines), digestOutputLines)
	// The failure comes last, nearest the log's end, where an excerpt of a few lines still shows it.
	writeLines(&b, "failure", strings.Split(strings.TrimSpace(r.FailureMessage()), "\n"), 40)
	fmt.Fprintf(&b, "  at %s\n", r.FailureLocation())
	fmt.Fprintf(&b, "==== END %s\n", r.FullText())
	return b.String()
}

func writeLines(b *strings.Builder, title string, lines []string, most int) {
	fmt.Fprintf(b, "  -- %s\n", title)
	for _, l := range lines[max(0, len(lines)-most):] {
		if len(l) > digestLineChars {
			l = l[:digestLineChars] + "…"
		}
		fmt.Fprintf(b, "  | %s\n", l)
	}
}

// specOutput is a spec's output up to the first log a cleanup dumped (agent or dockerd), which the digest
// reads on its own terms.
func specOutput(out string) string {
	for _, mark := range []string{"---- agent log ----", "---- dockerd "} {
		if i := strings.Index(out, mark); i >= 0 {
			out = out[:i]
		}
	}
	return strings.TrimRight(out, "\n")
}

func lastLines(s string, n int) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	return lines[max(0, len(lines)-n):]
}

// agentLinesOf are the lines of an agent's JSON log between from and to: its errors, then the last lines,
// digestAgentLines in all and in the log's order.
func agentLinesOf(path string, from, to time.Time) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var inTime []string
	var isError []bool
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var entry struct {
			TS    json.RawMessage `json:"ts"`
			Level string          `json:"level"`
		}
		if json.Unmarshal(sc.Bytes(), &entry) != nil {
			continue
		}
		at, ok := logTime(entry.TS)
		if !ok || at.Before(from) || at.After(to) {
			continue
		}
		inTime = append(inTime, sc.Text())
		isError = append(isError, entry.Level == "error")
	}
	return pickLines(inTime, isError, digestAgentLines)
}

// pickLines keeps every error line and fills up to most with the last lines, in their order.
func pickLines(lines []string, isError []bool, most int) []string {
	keep := make([]bool, len(lines))
	n := 0
	for i := range lines {
		if isError[i] && n < most/2 {
			keep[i], n = true, n+1
		}
	}
	for i := len(lines) - 1; i >= 0 && n < most; i-- {
		if !keep[i] {
			keep[i], n = true, n+1
		}
	}
	var out []string
	for i, l := range lines {
		if keep[i] {
			out = append(out, l)
		}
	}
	return out
}

// logTime reads zap's "ts": seconds since the epoch as a number, or an RFC 3339 string.
func logTime(raw json.RawMessage) (time.Time, bool) {
	if s, err := strconv.Unquote(string(raw)); err == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	secs, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, int64(secs*float64(time.Second))), true
}
