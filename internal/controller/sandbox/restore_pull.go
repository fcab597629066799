package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dockside-dev/dockside/internal/archive"
)

// openArchive opens the archive of a restore, verified byte for byte against its digest: from the node's
// store when it holds it, else, with a checkpoint registry, pulled from there by digest into a capture of
// the node's store (its room reserved under the store's limits) and checked on the way. A pulled archive
// serves this restore only: close drops it, so that no archive stays on a node that no Checkpoint's
// deletion would release (docs/design/checkpoints.md).
func (r *Reconciler) openArchive(ctx context.Context, res restoreResult) (io.Reader, func(), error) {
	f, err := r.Archives.Open(res.archive)
	if err == nil {
		return f, func() { f.Close() }, nil
	}
	if r.Registry == nil || !errors.Is(err, archive.ErrMissing) {
		return nil, nil, fmt.Errorf("opening the archive: %w", err)
	}
	c, err := r.Archives.Create(res.archive.Size, res.namespace)
	if err != nil {
		return nil, nil, fmt.Errorf("no room in node %s's checkpoint store to pull the archive: %w", r.Options.Node, err)
	}
	drop := func() { r.Archives.Discard(c) }
	if c.Most() < res.archive.Size {
		drop()
		return nil, nil, fmt.Errorf("the namespace's checkpoint cap on node %s leaves %d bytes, and the archive has %d", r.Options.Node, c.Most(), res.archive.Size)
	}
	if err := r.Registry.Pull(ctx, string(res.uid), res.archive, c); err != nil {
		drop()
		return nil, nil, fmt.Errorf("pulling from the checkpoint registry %s: %w", r.Registry, err)
	}
	if _, err := c.Seek(0, io.SeekStart); err != nil {
		drop()
		return nil, nil, fmt.Errorf("rewinding the pulled archive: %w", err)
	}
	return c, drop, nil
}
