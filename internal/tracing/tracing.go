// Package tracing is the agent's OpenTelemetry tracing: the tracer every reconciler, the data plane and the
// Docker driver's wrapper start spans with, the attributes they may carry (an allowlist enforced on export,
// redact.go), the span contexts of work that spans several reconcile passes (roots.go), and the set-up from the
// standard OTEL_* variables (setup.go). What each span means is in docs/tracing.md; why traces are shaped as
// they are, in docs/design/tracing.md.
package tracing

import (
	"context"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// scope names the instrumentation in every span the agent exports.
const scope = "github.com/dockside-dev/dockside"

// tracer is looked up on each use, so that a provider installed after a package's init (Setup, or a test's)
// is the one used.
func tracer() trace.Tracer {
	return otel.GetTracerProvider().Tracer(scope)
}

// Start starts a span named name, a child of ctx's span (which may be remote: a root from roots.go or an
// incoming request's); where ctx carries no trace, nothing is traced and the span does nothing, so that
// shared code (a service's check, a Docker call) is traced only as part of a piece of work that is. The
// context returned carries the span and, while tracing is on, a logger whose lines carry its trace_id and
// span_id. attrs must be of allowed keys (attributes.go); others are dropped on export.
func Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx)
	}
	return Begin(ctx, name, attrs...)
}

// Begin is Start for a piece of work that is traced on its own: without a trace in ctx, its span is the root
// of a new one (a data-plane call that came without a traceparent).
func Begin(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx, span := tracer().Start(ctx, name, trace.WithAttributes(attrs...))
	return withLogIDs(ctx, span), span
}

// Active tells whether ctx's span records, i.e. whether work started under ctx is traced. Callers that would
// do work only to name a span (a step's name) ask first.
func Active(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

// End ends span with err's outcome: an error sets the status Error and error.type to its kind, never its text
// (which may quote Docker or a command).
func End(span trace.Span, err error, kind string) {
	if err != nil {
		span.SetStatus(codes.Error, "")
		if kind != "" {
			span.SetAttributes(ErrorType(kind))
		}
	}
	span.End()
}

// plainLogger keeps the logger a context had before any span enriched it, so that nested spans replace the
// trace_id and span_id of a log line rather than repeat them.
type plainLogger struct{}

func withLogIDs(ctx context.Context, span trace.Span) context.Context {
	if !span.IsRecording() {
		return ctx
	}
	base, ok := ctx.Value(plainLogger{}).(logr.Logger)
	if !ok {
		base = logr.FromContextOrDiscard(ctx)
		ctx = context.WithValue(ctx, plainLogger{}, base)
	}
	sc := span.SpanContext()
	return logr.NewContext(ctx, base.WithValues("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String()))
}
