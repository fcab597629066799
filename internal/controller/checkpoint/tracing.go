package checkpoint

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/apimachinery/pkg/api/meta"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// traceCheckpoint is the kind of the trace of a Checkpoint's capture (docs/design/tracing.md).
const traceCheckpoint = "checkpoint"

// traceCapture places the capture of ckpt in the Checkpoint's trace: its spans (capture, freeze, store,
// push) are children of the Checkpoint's root, which recordCapture records once the capture is over.
func traceCapture(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) context.Context {
	return tracing.Within(ctx, tracing.Root(traceCheckpoint, string(ckpt.UID), 0))
}

// recordCapture records the root span of the Checkpoint, from its creation to now, once its capture has
// ended Ready or Failed.
func recordCapture(ctx context.Context, ckpt *dsv1alpha1.Checkpoint, sbx *dsv1alpha1.Sandbox) {
	phase := ckpt.Status.Phase
	if phase != dsv1alpha1.CheckpointReady && phase != dsv1alpha1.CheckpointFailed {
		return
	}
	attrs := []attribute.KeyValue{tracing.Namespace(ckpt.Namespace), tracing.Checkpoint(ckpt.Name), tracing.Phase(string(phase))}
	if c := meta.FindStatusCondition(ckpt.Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
		attrs = append(attrs, tracing.Reason(c.Reason))
	}
	attrs = append(attrs, tracing.Sandbox(sbx.Name), tracing.SandboxUID(string(sbx.UID)))
	tracing.RecordRoot(ctx, tracing.Root(traceCheckpoint, string(ckpt.UID), 0), "checkpoint", ckpt.CreationTimestamp.Time, phase == dsv1alpha1.CheckpointFailed, attrs...)
}
