package metered

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	dockerSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dockside_docker_operation_duration_seconds",
		Help:    "Latency of the agent's Docker operations, by operation and phase.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1ms to about 4 minutes
	}, []string{"operation", "phase"})
	dockerErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dockside_docker_operation_errors_total",
		Help: "Failed Docker operations, by operation, the phase that failed and the driver's error kind.",
	}, []string{"operation", "phase", "kind"})
)

func init() {
	metrics.Registry.MustRegister(dockerSeconds, dockerErrors)
}
