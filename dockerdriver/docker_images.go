package dockerdriver

import (
	"context"
	"sort"

	cerrdefs "github.com/containerd/errdefs"
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
	info := ImageInfo{Exists: true, ID: img.ID, RepoDigests: img.RepoDigests}
	if img.Config != nil {
		info.User = img.Config.User
		for v := range img.Config.Volumes {
			info.Volumes = append(info.Volumes, v)
		}
		sort.Strings(info.Volumes)
	}
	return info, nil
}
