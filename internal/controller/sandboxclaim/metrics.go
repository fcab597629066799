package sandboxclaim

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// claims counts the claims this agent bound, by how: a warm Sandbox of the pool, or a cold start because
// the pool had none ready (or the claim sets secretFiles).
var claims = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dockside_sandbox_claims_total",
	Help: "SandboxClaims bound by this agent, by start: Warm (a pool's running Sandbox) or Cold (started for the claim).",
}, []string{"start"})

func init() {
	metrics.Registry.MustRegister(claims)
	for _, start := range []dsv1alpha1.ClaimStart{dsv1alpha1.ClaimWarm, dsv1alpha1.ClaimCold} {
		claims.WithLabelValues(string(start)) // 0, not "no data", before the first claim
	}
}
