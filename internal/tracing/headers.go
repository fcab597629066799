package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// w3c is the one propagation the agent speaks: W3C trace context (traceparent, tracestate), as the Python
// client and the kubectl plugin send it.
var w3c = propagation.TraceContext{}

// FromHeaders returns ctx with the trace context of an incoming request's headers, if any, as the parent of
// the spans started under it.
func FromHeaders(ctx context.Context, h http.Header) context.Context {
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// ToHeaders writes ctx's span context into the headers of an outgoing request.
func ToHeaders(ctx context.Context, h http.Header) {
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}
