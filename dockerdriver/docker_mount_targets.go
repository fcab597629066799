package dockerdriver

import (
	"context"
	"fmt"
	"os"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

// vetCreated lets a container that was never started through only if none of its mount targets resolves,
// inside its image, through a symbolic link: Docker follows such a link and mounts at its target, so an
// image whose /work links to /dev would put the workspace over /dev, which Validate refuses by name only.
// A refused container is removed again, and the error is InvalidSpec, naming the link: the image must
// change. A started container was vetted when it was created.
func (d *Docker) vetCreated(ctx context.Context, spec ContainerSpec, info ContainerInfo) (ContainerInfo, error) {
	if !info.Exists || info.State != StateCreated {
		return info, nil
	}
	link, err := d.linkedMountTarget(ctx, spec, info.ID)
	if err != nil || link == "" {
		return info, err
	}
	if err := d.cli.ContainerRemove(ctx, info.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return ContainerInfo{}, d.classify(err, PhaseRemove, spec.Name)
	}
	return ContainerInfo{}, errorf(KindInvalidSpec, PhaseImage, spec.Image,
		"%s, and Docker would mount at the link's target; the image must hold a directory or nothing there", link)
}

// linkedMountTarget says, for people, the first mount target of spec that is, or lies under, a symbolic link
// of the created container id's image; "" when there is none. It asks the archive API about each
// leading part of each target (/a, then /a/b): the daemon resolves links in every part but the last, so
// only the last can be seen to be one. A part the image lacks ends that target's walk: Docker makes it a
// plain directory.
func (d *Docker) linkedMountTarget(ctx context.Context, spec ContainerSpec, id string) (string, error) {
	for _, target := range mountTargets(spec) {
		for _, part := range leadingParts(target) {
			st, err := d.cli.ContainerStatPath(ctx, id, part)
			if cerrdefs.IsNotFound(err) {
				break
			}
			if err != nil {
				return "", d.classify(err, PhaseCreate, spec.Name)
			}
			if st.Mode&os.ModeSymlink != 0 {
				return fmt.Sprintf("mount target %s resolves through a symbolic link of the image (%s -> %s)", target, part, st.LinkTarget), nil
			}
		}
	}
	return "", nil
}

// leadingParts lists the paths from the first element of the clean absolute path p to p itself:
// /a/b/c gives /a, /a/b, /a/b/c.
func leadingParts(p string) []string {
	var parts []string
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			parts = append(parts, p[:i])
		}
	}
	return parts
}
