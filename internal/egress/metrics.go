package egress

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Verdicts and the reasons that go with allowed and failed ones; refusals carry their Refusal's reason.
const (
	verdictAllowed   = "allowed"
	verdictRefused   = "refused"
	verdictFailed    = "failed"
	reasonConnected  = "Connected"
	reasonDialFailed = "DialFailed"
)

// requests is on the manager's endpoint, next to controller-runtime's own metrics.
var requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "dockside_egress_requests_total",
	Help: "Egress proxy decisions, by verdict and reason: allowed (Connected), refused (the refusal's reason: " +
		"NotOnAllowlist, ForbiddenAddress, UnknownSource, ResolveFailed, BadRequest, TooManyConnections) or " +
		"failed (DialFailed: permitted, but the destination did not answer).",
}, []string{"verdict", "reason"})

func init() {
	metrics.Registry.MustRegister(requests)
	// Every series exists from the start, so that a rate over it is defined before its first event.
	requests.WithLabelValues(verdictAllowed, reasonConnected)
	requests.WithLabelValues(verdictFailed, reasonDialFailed)
	for _, r := range []string{ReasonNotAllowed, ReasonForbiddenAddress, ReasonUnknownSource, ReasonResolveFailed, ReasonBadRequest, ReasonBusy} {
		requests.WithLabelValues(verdictRefused, r)
	}
}

func countAllowed()           { requests.WithLabelValues(verdictAllowed, reasonConnected).Inc() }
func countFailed()            { requests.WithLabelValues(verdictFailed, reasonDialFailed).Inc() }
func countRefused(r *Refusal) { requests.WithLabelValues(verdictRefused, r.Reason).Inc() }
