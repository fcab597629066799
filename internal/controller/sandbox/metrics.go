package sandbox

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Metrics on the manager's endpoint, next to controller-runtime's own.
var (
	readySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dockside_sandbox_ready_seconds",
		Help:    "Time from a Sandbox's creation until it was first Ready (a session's primary running, or a run finished successfully), by kind (session or run).",
		Buckets: prometheus.ExponentialBuckets(0.25, 2, 12), // 0.25s to about 8.5 minutes
	}, []string{"kind"})
	poisonings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dockside_topology_poisonings_total",
		Help: "Topologies poisoned, by reason (ServiceExited, ServiceUnhealthy, ServiceReadinessFailed, PrimaryExited).",
	}, []string{"reason"})
)

func init() {
	metrics.Registry.MustRegister(readySeconds, poisonings)
	// The series of the kinds and of the poisonings of a running topology exist from the start, so that a
	// dashboard's rate over them is 0, not "no data", before their first event (config/grafana).
	for _, kind := range []string{"session", "run"} {
		readySeconds.WithLabelValues(kind)
	}
	for _, reason := range []string{dsv1alpha1.ReasonServiceExited, dsv1alpha1.ReasonServiceUnhealthy, dsv1alpha1.ReasonServiceReadinessFailed, dsv1alpha1.ReasonPrimaryExited} {
		poisonings.WithLabelValues(reason)
	}
}

// recordTransitions counts what a status write made true: the first Ready of a Sandbox (its first topology
// running, or its run succeeded) and a poisoning. It runs only after the write succeeded, which the
// resourceVersion guard makes the one write of that transition.
func recordTransitions(before, after *dsv1alpha1.Sandbox) {
	ready := meta.FindStatusCondition(after.Status.Conditions, dsv1alpha1.ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue && after.Status.TopologyGeneration == 1 &&
		(ready.Reason == dsv1alpha1.ReasonRunning || ready.Reason == dsv1alpha1.ReasonCompleted) &&
		!meta.IsStatusConditionTrue(before.Status.Conditions, dsv1alpha1.ConditionReady) {
		kind := "session"
		if len(after.Spec.Command) > 0 {
			kind = "run"
		}
		readySeconds.WithLabelValues(kind).Observe(time.Since(after.CreationTimestamp.Time).Seconds())
	}
	if isPoisoned(after) && !isPoisoned(before) {
		reason := meta.FindStatusCondition(after.Status.Conditions, dsv1alpha1.ConditionTopologyPoisoned).Reason
		poisonings.WithLabelValues(reason).Inc()
	}
}

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
