// Package spans collects the spans the code under test exports, through the agent's own tracer provider
// (internal/tracing: redaction and root IDs included) into the SDK's in-memory exporter.
package spans

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dockside-dev/dockside/internal/tracing"
)

// Collect turns tracing on for the rest of the test (the global provider: tests that use it do not run in
// parallel) and returns a function that gives every span exported so far.
func Collect(t *testing.T) (collect func() tracetest.SpanStubs) {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	tp := tracing.NewProvider(mem)
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	return func() tracetest.SpanStubs {
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatalf("flushing spans: %v", err)
		}
		return mem.GetSpans()
	}
}

// Tree indexes spans by their span ID.
type Tree map[trace.SpanID]tracetest.SpanStub

// TreeOf indexes spans.
func TreeOf(spans tracetest.SpanStubs) Tree {
	t := Tree{}
	for _, s := range spans {
		t[s.SpanContext.SpanID()] = s
	}
	return t
}

// Parent is the name of s's parent, "" when it has none among the spans.
func (t Tree) Parent(s tracetest.SpanStub) string {
	return t[s.Parent.SpanID()].Name
}

// Named are the spans of that name.
func Named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}
