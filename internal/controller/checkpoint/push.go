package checkpoint

import (
	"context"
	"fmt"
	"io"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/archive"
)

// push copies an archive just stored on this node to the agent's checkpoint registry, if it has one, so
// that the Checkpoint restores on any node and outlives this one (docs/design/checkpoints.md). The
// bytes are read from the node's store, verified against their digest on the way.
func (r *Reconciler) push(ctx context.Context, ckpt *dsv1alpha1.Checkpoint, a archive.Archive) error {
	if r.Registry == nil {
		return nil
	}
	if err := r.Registry.Push(ctx, string(ckpt.UID), a, func() (io.ReadCloser, error) { return r.Store.Open(a) }); err != nil {
		return fmt.Errorf("pushing Checkpoint %s: %w", ckpt.Name, err)
	}
	return nil
}

// unpush deletes the Checkpoint's artifact from the registry, if the agent has one: its manifest, and the
// archive's blob when no other Checkpoint's manifest names it.
func (r *Reconciler) unpush(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) error {
	if r.Registry == nil {
		return nil
	}
	if err := r.Registry.Delete(ctx, string(ckpt.UID)); err != nil {
		return fmt.Errorf("deleting Checkpoint %s from the registry: %w", ckpt.Name, err)
	}
	return nil
}
