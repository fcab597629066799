package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/dockside-dev/dockside/internal/testutil/spans"
	"github.com/dockside-dev/dockside/internal/tracing"
)

func TestExportedSpansCarryOnlyAllowedAttributes(t *testing.T) {
	secret := "hunter2-do-not-export"
	collect := spans.Collect(t)
	_, span := tracing.Begin(context.Background(), "sandbox.step", tracing.Namespace("team-a"), tracing.TopologyGeneration(3),
		attribute.String("image", "registry.example/app:"+secret), attribute.StringSlice("command", []string{"sh", "-c", secret}))
	span.SetAttributes(attribute.String("env.TOKEN", secret), tracing.Reason("ImagePulling"))
	span.RecordError(errors.New("Error response from daemon: " + secret))
	span.AddEvent("stdin", trace.WithAttributes(attribute.String("data", secret)))
	span.SetStatus(codes.Error, "docker said "+secret)
	span.End()
	exported := collect()
	if len(exported) != 1 {
		t.Fatalf("want 1 span, got %d", len(exported))
	}
	s := exported[0]
	got := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		got[kv.Key] = kv.Value.String()
	}
	want := map[attribute.Key]string{"k8s.namespace.name": "team-a", "dockside.topology.generation": "3", "dockside.reason": "ImagePulling"}
	if len(got) != len(want) {
		t.Errorf("attributes %v, want exactly %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	if len(s.Events) != 0 || s.Status.Code != codes.Error || s.Status.Description != "" {
		t.Errorf("events %v and status %+v: want no events, status Error without a description", s.Events, s.Status)
	}
	if strings.Contains(spans.Text(s), secret) {
		t.Errorf("the exported span carries the secret: %s", spans.Text(s))
	}
}

// A library's spans (the Docker client's HTTP spans, named for a path that may hold an image reference) never
// leave the agent, even inside one of its own.
func TestOnlyTheAgentsOwnSpansAreExported(t *testing.T) {
	collect := spans.Collect(t)
	ctx, own := tracing.Begin(context.Background(), "docker.InspectImage")
	_, lib := otel.Tracer("github.com/docker/docker/client").Start(ctx, "GET /v1.41/images/registry.example/app:secret/json")
	lib.End()
	own.End()
	exported := collect()
	if len(exported) != 1 || exported[0].Name != "docker.InspectImage" {
		t.Errorf("exported %d spans, want docker.InspectImage alone: %v", len(exported), exported)
	}
}

func TestPassesShareTheRootRecordedAtTheEnd(t *testing.T) {
	root := tracing.Root("sandbox-start", "uid-1", 2)
	if !root.Equal(tracing.Root("sandbox-start", "uid-1", 2)) || root.TraceID() == tracing.Root("sandbox-start", "uid-1", 3).TraceID() {
		t.Fatal("a root must be the same for the same work and differ for another generation")
	}
	began := time.Now().Add(-time.Second)
	collect := spans.Collect(t)
	for range 2 { // two reconcile passes, as two workers or two agents would run them
		ctx, pass := tracing.Start(tracing.Within(context.Background(), root), "sandbox.pass")
		_, step := tracing.Start(ctx, "sandbox.ensureImages")
		tracing.End(step, nil, "")
		tracing.End(pass, nil, "")
	}
	tracing.RecordRoot(context.Background(), root, "sandbox.start", began, false, tracing.Phase("Running"))
	exported := collect()
	if len(exported) != 5 {
		t.Fatalf("want 5 spans, got %d", len(exported))
	}
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range exported {
		byID[s.SpanContext.SpanID()] = s
		if s.SpanContext.TraceID() != root.TraceID() {
			t.Errorf("span %s is in trace %s, want %s", s.Name, s.SpanContext.TraceID(), root.TraceID())
		}
	}
	rec, ok := byID[root.SpanID()]
	if !ok || rec.Name != "sandbox.start" || rec.Parent.IsValid() || !rec.StartTime.Equal(began) {
		t.Fatalf("the root recorded is %+v, want sandbox.start with the root's IDs, no parent, started at %v", rec, began)
	}
	for _, s := range exported {
		switch s.Name {
		case "sandbox.pass":
			if s.Parent.SpanID() != root.SpanID() {
				t.Errorf("a pass's parent is %s, want the root %s", s.Parent.SpanID(), root.SpanID())
			}
		case "sandbox.ensureImages":
			if byID[s.Parent.SpanID()].Name != "sandbox.pass" {
				t.Errorf("a step's parent is %q, want its pass", byID[s.Parent.SpanID()].Name)
			}
		}
	}
}

func TestLogLinesCarryTheSpanTheyAreWrittenIn(t *testing.T) {
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	spans.Collect(t)
	ctx, pass := tracing.Begin(logr.NewContext(context.Background(), log), "sandbox.pass")
	ctx2, step := tracing.Start(ctx, "sandbox.step")
	outer, inner := pass.SpanContext(), step.SpanContext()
	logr.FromContextOrDiscard(ctx2).Info("in the step")
	logr.FromContextOrDiscard(ctx).Info("in the pass")
	step.End()
	pass.End()
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %v", lines)
	}
	for i, sc := range []trace.SpanContext{inner, outer} {
		want := ` "trace_id"="` + sc.TraceID().String() + `" "span_id"="` + sc.SpanID().String() + `"`
		if !strings.HasSuffix(lines[i], want) || strings.Count(lines[i], "trace_id") != 1 {
			t.Errorf("line %d is %s, want %s (once each)", i, lines[i], want)
		}
	}
}

func TestOnlyTheStandardVariablesTurnTracingOn(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		if got := tracing.Enabled(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("tracing.Enabled(%v) = %v, want %v", c.env, got, c.want)
		}
	}
}

func TestNothingIsTracedOutsideAPieceOfWorkThatIs(t *testing.T) {
	collect := spans.Collect(t)
	_, span := tracing.Start(context.Background(), "sandbox.service")
	span.End()
	if got := collect(); len(got) != 0 {
		t.Errorf("a span started outside any trace was exported: %v", got)
	}
}
