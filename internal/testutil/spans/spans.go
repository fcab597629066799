// Package spans collects the spans the code under test exports, through the agent's own tracer provider
// (internal/tracing: redaction and root IDs included) into the SDK's in-memory exporter.
package spans

import (
	"context"
	"strings"
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

// Parents names the parents of the spans called name.
func (t Tree) Parents(spans tracetest.SpanStubs, name string) []string {
	var out []string
	for _, s := range Named(spans, name) {
		out = append(out, t.Parent(s))
	}
	return out
}

// Text is everything of s an exporter sends that could hold a value (its name, status description,
// attributes and events), for a test to look for values no span may carry.
func Text(s tracetest.SpanStub) string {
	var b strings.Builder
	b.WriteString(s.Name + s.Status.Description)
	for _, kv := range s.Attributes {
		b.WriteString(string(kv.Key) + "=" + kv.Value.String())
	}
	for _, e := range s.Events {
		b.WriteString(e.Name)
		for _, kv := range e.Attributes {
			b.WriteString(kv.Value.String())
		}
	}
	return b.String()
}
