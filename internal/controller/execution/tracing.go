package execution

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// traceExecution is the kind of an Execution's trace: its root spans from the Execution's creation to its
// outcome, with its time in the queue, its run and the recording of its outcome as children
// (docs/design/tracing.md).
const traceExecution = "execution"

// traceRun places a run in its Execution's trace and records the time the Execution waited in its queue.
func traceRun(ctx context.Context, ex *dsv1alpha1.Execution) context.Context {
	ctx = tracing.Within(ctx, tracing.Root(traceExecution, string(ex.UID), 0))
	tracing.Record(ctx, "execution.queue", ex.CreationTimestamp.Time, time.Now(), executionAttrs(ex)...)
	return ctx
}

// traceCommand is the span of the command's run; the function returned ends it with the driver's answer.
func traceCommand(ctx context.Context) (context.Context, func(dd.ExecResult, error)) {
	ctx, span := tracing.Start(ctx, "execution.run")
	return ctx, func(res dd.ExecResult, err error) {
		if err == nil {
			span.SetAttributes(tracing.ExitCode(res.ExitCode))
		}
		if res.Reason != "" {
			span.SetAttributes(tracing.Reason(string(res.Reason)))
		}
		tracing.End(span, err, string(dd.KindOf(err)))
	}
}

// traceOutcome is the span of recording the verdict (and poisoning the Sandbox when it must); the function
// returned ends it and records the Execution's root span.
func traceOutcome(ctx context.Context, ex *dsv1alpha1.Execution, v verdict) (context.Context, func()) {
	attrs := append(executionAttrs(ex), tracing.Phase(string(v.phase)), tracing.Reason(v.reason))
	ctx, span := tracing.Start(ctx, "execution.outcome", attrs...)
	return ctx, func() {
		span.End()
		tracing.RecordRoot(ctx, tracing.Root(traceExecution, string(ex.UID), 0), "execution", ex.CreationTimestamp.Time,
			v.phase == dsv1alpha1.ExecutionFailed, attrs...)
	}
}

func executionAttrs(ex *dsv1alpha1.Execution) []attribute.KeyValue {
	return []attribute.KeyValue{tracing.Namespace(ex.Namespace), tracing.Execution(ex.Name), tracing.Sandbox(ex.Spec.SandboxName)}
}
