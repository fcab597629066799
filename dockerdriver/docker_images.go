package dockerdriver

import (
	"context"
	"sort"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
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
		info.User, info.Labels = img.Config.User, img.Config.Labels
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

// ListImages lists the images carrying every label of match, and marks those any container of the daemon
// (every node's, and containers no agent made) was made from, whatever its state.
func (d *Docker) ListImages(ctx context.Context, match map[string]string) ([]ImageSummary, error) {
	f := filters.NewArgs()
	for k, v := range match {
		f.Add("label", k+"="+v)
	}
	images, err := d.cli.ImageList(ctx, image.ListOptions{Filters: f})
	if err != nil {
		return nil, d.classify(err, PhaseObserve, "")
	}
	containers, err := d.cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, d.classify(err, PhaseObserve, "")
	}
	used := map[string]bool{}
	for _, c := range containers {
		used[c.ImageID] = true
	}
	out := make([]ImageSummary, 0, len(images))
	for _, img := range images {
		var refs []string
		for _, tag := range img.RepoTags {
			if tag != "<none>:<none>" {
				refs = append(refs, tag)
			}
		}
		out = append(out, ImageSummary{ID: img.ID, Refs: refs, Size: img.Size, InUse: used[img.ID]})
	}
	return out, nil
}
