package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A client of the data plane (the kubectl plugin) sends a W3C traceparent with its requests, so that the
// agent's dataplane.* spans are children of the caller's (docs/tracing.md).

// CallerParent is the span context a client's requests carry: the one in TRACEPARENT (and TRACESTATE) when it
// holds a valid one, which is how a calling program passes its own span to a command it runs, else a new
// sampled trace of the client's own.
func CallerParent(getenv func(string) string) trace.SpanContext {
	env := propagation.MapCarrier{"traceparent": getenv("TRACEPARENT"), "tracestate": getenv("TRACESTATE")}
	if sc := trace.SpanContextFromContext(w3c.Extract(context.Background(), env)); sc.IsValid() {
		return sc
	}
	tid, sid := ids{}.NewIDs(context.Background())
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

// Propagating wraps rt so that every request it sends carries parent as its traceparent.
func Propagating(rt http.RoundTripper, parent trace.SpanContext) http.RoundTripper {
	return propagating{next: rt, parent: trace.ContextWithRemoteSpanContext(context.Background(), parent)}
}

type propagating struct {
	next   http.RoundTripper
	parent context.Context
}

func (p propagating) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not change the request it is given
	w3c.Inject(p.parent, propagation.HeaderCarrier(r.Header))
	return p.next.RoundTrip(r) //nolint:wrapcheck // a transport's errors pass through as they are: http.Client and client-go read them
}
