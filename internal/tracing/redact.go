package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// redacting is the one place that decides what leaves the agent in a span: every span passes through it on
// its way to the exporter, whoever started it. It keeps the agent's own spans only (a library's, such as the
// Docker client's HTTP spans, are named for the request's path, which holds image references), their
// attributes of allowed keys only (attributes.go), and drops every event (an error recorded as an event
// carries its text) and the status description (Docker's error text, a command's), keeping the status code.
type redacting struct {
	next sdktrace.SpanExporter
}

func (r redacting) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	out := make([]sdktrace.ReadOnlySpan, 0, len(spans))
	for _, s := range spans {
		if s.InstrumentationScope().Name == scope {
			out = append(out, redacted{s})
		}
	}
	if err := r.next.ExportSpans(ctx, out); err != nil {
		return fmt.Errorf("exporting spans: %w", err)
	}
	return nil
}

func (r redacting) Shutdown(ctx context.Context) error {
	if err := r.next.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutting the span exporter down: %w", err)
	}
	return nil
}

// redacted is a span as it may be exported.
type redacted struct {
	sdktrace.ReadOnlySpan
}

func (s redacted) Attributes() []attribute.KeyValue { return allowedOnly(s.ReadOnlySpan.Attributes()) }

func (s redacted) Events() []sdktrace.Event { return nil }

func (s redacted) DroppedEvents() int { return 0 }

func (s redacted) Status() sdktrace.Status {
	return sdktrace.Status{Code: s.ReadOnlySpan.Status().Code}
}

func (s redacted) Links() []sdktrace.Link {
	links := s.ReadOnlySpan.Links()
	out := make([]sdktrace.Link, len(links))
	for i, l := range links {
		out[i] = sdktrace.Link{SpanContext: l.SpanContext, Attributes: allowedOnly(l.Attributes)}
	}
	return out
}

func allowedOnly(attrs []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		if allowed[kv.Key] {
			out = append(out, kv)
		}
	}
	return out
}
