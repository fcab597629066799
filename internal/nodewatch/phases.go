package nodewatch

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// phaseCollector reports dockside_sandboxes for one node, counted from the agent's cache at scrape time, so
// it never drifts from what the agent sees and needs no bookkeeping.
type phaseCollector struct {
	desc   *prometheus.Desc
	reader client.Reader
}

// NewPhaseCollector returns the collector of dockside_sandboxes{node,phase}, reading Sandboxes from reader
// (the agent's cache, which holds only the node's). The node is a constant label, so that agents of
// different nodes in one process (tests) can each register theirs.
func NewPhaseCollector(node string, reader client.Reader) prometheus.Collector {
	return &phaseCollector{reader: reader, desc: prometheus.NewDesc("dockside_sandboxes",
		"Sandboxes bound to the agent's node, by phase.", []string{"phase"}, prometheus.Labels{"node": node})}
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var list dsv1alpha1.SandboxList
	if err := c.reader.List(ctx, &list); err != nil {
		return // cache not started or stopped: report nothing rather than zeros
	}
	counts := map[dsv1alpha1.SandboxPhase]int{}
	for _, p := range []dsv1alpha1.SandboxPhase{dsv1alpha1.SandboxPending, dsv1alpha1.SandboxStarting, dsv1alpha1.SandboxRunning, dsv1alpha1.SandboxPaused,
		dsv1alpha1.SandboxSucceeded, dsv1alpha1.SandboxFailed, dsv1alpha1.SandboxTerminating} {
		counts[p] = 0
	}
	for _, sbx := range list.Items {
		phase := sbx.Status.Phase
		if phase == "" {
			phase = dsv1alpha1.SandboxPending
		}
		counts[phase]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(phase))
	}
}
