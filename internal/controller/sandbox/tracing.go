package sandbox

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/api/meta"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/topology"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// Trace kinds: a Sandbox's start (one trace per topology generation) and its deletion are each one trace
// across the passes that make them (docs/design/tracing.md). A pass over a Sandbox at rest is not traced.
const (
	traceStart    = "sandbox-start"
	traceDeletion = "sandbox-deletion"
)

// passTrace is the span of one pass within the trace of the start or deletion it works on.
type passTrace struct {
	kind string
	root trace.SpanContext
	span trace.Span
}

// tracePass starts the span of a pass over sbx, when the pass is part of a start or a deletion; nil when it
// is not, or tracing is off. A deletion is over once the agent's finalizer is gone, though the Sandbox may
// still be read (another finalizer, or the watch's last update before the removal): a pass then is no part
// of it, and must not record its root a second time.
func tracePass(ctx context.Context, sbx *dsv1alpha1.Sandbox) (context.Context, *passTrace) {
	p := &passTrace{}
	st := &sbx.Status
	switch {
	case cleanedUp(sbx):
		return ctx, nil
	case !sbx.DeletionTimestamp.IsZero():
		p.kind, p.root = traceDeletion, tracing.Root(traceDeletion, string(sbx.UID), 0)
	case st.StartTime == nil && !topology.Settled(sbx):
		p.kind, p.root = traceStart, tracing.Root(traceStart, string(sbx.UID), max(st.TopologyGeneration, 1))
	default:
		return ctx, nil
	}
	ctx, p.span = tracing.Start(tracing.Within(ctx, p.root), "sandbox.pass", sandboxAttrs(sbx)...)
	if !p.span.IsRecording() {
		return ctx, nil
	}
	return ctx, p
}

// end ends the pass's span and, when its start or deletion is over (and the pass's writes stood), records the
// root span of the whole.
func (p *passTrace) end(ctx context.Context, sbx *dsv1alpha1.Sandbox, err error) {
	if p == nil {
		return
	}
	attrs := append(sandboxAttrs(sbx), tracing.Phase(string(sbx.Status.Phase)), tracing.Reason(readyReason(sbx)))
	p.span.SetAttributes(attrs...)
	tracing.End(p.span, err, "")
	if err != nil {
		return
	}
	switch {
	case p.kind == traceDeletion && cleanedUp(sbx):
		tracing.RecordRoot(ctx, p.root, "sandbox.deletion", sbx.DeletionTimestamp.Time, false, sandboxAttrs(sbx)...)
	case p.kind == traceStart && (sbx.Status.StartTime != nil || topology.Settled(sbx)):
		tracing.RecordRoot(ctx, p.root, "sandbox.start", startedAt(sbx), topology.Settled(sbx) && sbx.Status.Phase == dsv1alpha1.SandboxFailed, attrs...)
	}
}

// startedAt is when the start of the current topology generation began: the Sandbox's creation for its first
// (binding and admission are part of it), the clock of status.startup for a roll.
func startedAt(sbx *dsv1alpha1.Sandbox) time.Time {
	if su := sbx.Status.Startup; sbx.Status.TopologyGeneration > 1 && su != nil && su.TopologyGeneration == sbx.Status.TopologyGeneration {
		return su.StartTime.Time
	}
	return sbx.CreationTimestamp.Time
}

func sandboxAttrs(sbx *dsv1alpha1.Sandbox) []attribute.KeyValue {
	return []attribute.KeyValue{tracing.Namespace(sbx.Namespace), tracing.Sandbox(sbx.Name), tracing.SandboxUID(string(sbx.UID)),
		tracing.TopologyGeneration(sbx.Status.TopologyGeneration)}
}

func readyReason(sbx *dsv1alpha1.Sandbox) string {
	if c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// traceStep starts the span of one step of a traced pass, named for the step's method (ensureImages...); the
// function returned ends it, with the reason the pass stopped at it, if it did.
func traceStep(ctx context.Context, s *scope, run step) (context.Context, func(stop bool, err error)) {
	if !tracing.Active(ctx) {
		return ctx, func(bool, error) {}
	}
	ctx, span := tracing.Start(ctx, "sandbox."+stepName(run))
	return ctx, func(stop bool, err error) {
		if stop || err != nil {
			span.SetAttributes(tracing.Reason(s.finding.reason))
		}
		tracing.End(span, err, "")
	}
}

// stepName is the method name of a step: runtime names a method value "pkg.(*Reconciler).ensureImages-fm".
func stepName(run step) string {
	name := runtime.FuncForPC(reflect.ValueOf(run).Pointer()).Name()
	name = strings.TrimSuffix(name[strings.LastIndexByte(name, '.')+1:], "-fm")
	return name
}
