package dockerdriver

import (
	"context"
	"sort"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
)

// InspectImage reports whether ref is present locally, its ID and digests, declared VOLUMEs and user.
func (d *Docker) InspectImage(ctx context.Context, ref string) (ImageInfo, error) {
	img, err := d.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return ImageInfo{}, nil
	}
	if err != nil {
		return ImageInfo{}, d.classify(err, PhaseImage, ref)
	}
	info := ImageInfo{Exists: true, ID: img.ID, RepoDigests: img.RepoDigests, Size: img.Size}
	if img.Config != nil {
		info.User = img.Config.User
		for v := range img.Config.Volumes {
			info.Volumes = append(info.Volumes, v)
		}
		sort.Strings(info.Volumes)
	}
	return info, nil
}

// RemoveImage removes the name ref, and the image with it when no other name holds it. Docker refuses, and
// so does this (a Conflict), while any container, running or not, was made from it; missing is not an error.
func (d *Docker) RemoveImage(ctx context.Context, ref string) error {
	_, err := d.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return d.classify(err, PhaseImage, ref)
}
