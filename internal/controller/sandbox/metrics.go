package sandbox

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/topology"
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
	if topology.Poisoned(after) && !topology.Poisoned(before) {
		reason := meta.FindStatusCondition(after.Status.Conditions, dsv1alpha1.ConditionTopologyPoisoned).Reason
		poisonings.WithLabelValues(reason).Inc()
	}
}
