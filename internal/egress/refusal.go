package egress

import "net/http"

// Reasons of a Refusal: the X-Dockside-Refusal header of the proxy's answer and the reason label of
// dockside_egress_requests_total.
const (
	ReasonNotAllowed       = "NotOnAllowlist"     // the destination is not on the Sandbox's network.allow list
	ReasonForbiddenAddress = "ForbiddenAddress"   // the destination is, or resolves only to, addresses the Policy refuses
	ReasonUnknownSource    = "UnknownSource"      // the connecting address is not an Isolated Sandbox of this node
	ReasonResolveFailed    = "ResolveFailed"      // the name could not be resolved
	ReasonBadRequest       = "BadRequest"         // not a CONNECT host:port nor an absolute http:// request
	ReasonBusy             = "TooManyConnections" // over MaxConns or MaxConnsPerSandbox
)

// Refusal is why a destination was refused. Message completes "refused CONNECT to host:port: ...".
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// statusCode is the HTTP status the proxy answers a Refusal with: 403 for what policy refuses, and the
// conventional code for the rest, so that clients treat a busy proxy or a failed lookup as they usually do.
func (r *Refusal) statusCode() int {
	switch r.Reason {
	case ReasonBadRequest:
		return http.StatusBadRequest
	case ReasonResolveFailed:
		return http.StatusBadGateway
	case ReasonBusy:
		return http.StatusServiceUnavailable
	default:
		return http.StatusForbidden
	}
}
