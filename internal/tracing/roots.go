package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Work that spans several reconcile passes (a Sandbox's start, its deletion, an Execution, a Checkpoint) is
// one trace whose root span is known before it is recorded: its IDs are derived from what the work is (kind,
// object UID, generation), so every pass, on this agent or after its restart, parents its span on the same
// root, and the root itself is recorded once, when the work is over (docs/design/tracing.md).

// Root is the span context of the root span of the work kind on the object uid, generation gen.
func Root(kind, uid string, gen int64) trace.SpanContext {
	sum := sha256.Sum256(fmt.Appendf(nil, "dockside/%s/%s/%d", kind, uid, gen))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// Within returns ctx with root as the parent of the spans started under it.
func Within(ctx context.Context, root trace.SpanContext) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, root)
}

// RecordRoot records the root span of a piece of work, with root's IDs, from start to now; failed marks it
// an error.
func RecordRoot(ctx context.Context, root trace.SpanContext, name string, start time.Time, failed bool, attrs ...attribute.KeyValue) {
	ctx = context.WithValue(ctx, fixedIDs{}, root)
	_, span := tracer().Start(ctx, name, trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if failed {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// fixedIDs carries the IDs RecordRoot gives its span.
type fixedIDs struct{}

// ids gives a span the IDs RecordRoot asks for, and random ones otherwise.
type ids struct{}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if sc, ok := ctx.Value(fixedIDs{}).(trace.SpanContext); ok {
		return sc.TraceID(), sc.SpanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

func (ids) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return randomSpanID() }

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// Record records a span of work that is already over, from start to end, as a child of ctx's span: a wait
// known from timestamps (an Execution's time in its queue).
func Record(ctx context.Context, name string, start, end time.Time, attrs ...attribute.KeyValue) {
	_, span := tracer().Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(end))
}
