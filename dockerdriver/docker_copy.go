package dockerdriver

import (
	"context"
	"io"

	"github.com/docker/docker/api/types/container"
)

// CopyFrom streams path out of the container as a tar archive, through the daemon's archive API (which
// sees tmpfs-backed named volumes, and works on a paused container).
func (d *Docker) CopyFrom(ctx context.Context, name, path string) (io.ReadCloser, error) {
	info, err := d.existing(ctx, name, PhaseCopy)
	if err != nil {
		return nil, err
	}
	rc, _, err := d.cli.CopyFromContainer(ctx, info.ID, path)
	if err != nil {
		return nil, d.classify(err, PhaseCopy, name)
	}
	return rc, nil
}

// CopyTo extracts the tar archive into dir, which must exist in the container.
func (d *Docker) CopyTo(ctx context.Context, name, dir string, tar io.Reader) error {
	info, err := d.existing(ctx, name, PhaseCopy)
	if err != nil {
		return err
	}
	return d.classify(d.cli.CopyToContainer(ctx, info.ID, dir, tar, container.CopyToContainerOptions{}), PhaseCopy, name)
}

// existing observes an owned container and turns absence into NotFound.
func (d *Docker) existing(ctx context.Context, name string, phase Phase) (ContainerInfo, error) {
	info, err := d.owned(ctx, name, phase)
	if err == nil && !info.Exists {
		err = NewError(KindNotFound, phase, name, "the container does not exist")
	}
	return info, err
}
