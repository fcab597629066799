package dockerdriver

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"path"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
)

// fillerPath is where the filler container mounts a supervisor volume, writable.
const fillerPath = "/supervisor"

// createSupervisorVolume makes a supervisor volume (VolumeSpec.Supervisor): a plain local volume on the
// daemon's disk, not a tmpfs, since its content must last while no container mounts it (from its filling
// until the primary starts, and between primaries).
func (d *Docker) createSupervisorVolume(ctx context.Context, spec VolumeSpec, labels map[string]string) error {
	_, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: spec.Name, Driver: "local", Labels: labels})
	return d.classify(err, PhaseVolume, spec.Name)
}

// fillSupervisorVolume writes the supervisor of spec.Supervisor's image into the volume, as root and mode
// 0555, beside whatever an older agent put there. A primary mounts the volume read-only, so only Docker can
// write it, and it does so here through a filler: a container of the image that mounts the volume writable
// and is never started (Docker mounts a created container's volumes for the archive API), removed again at
// once. The filler has the volume's labels, so one left by an agent that stopped meanwhile is removed with
// the Sandbox like any of its containers, or by the next filling.
func (d *Docker) fillSupervisorVolume(ctx context.Context, spec VolumeSpec, labels map[string]string) error {
	bin, err := d.supervisor(ctx, spec.Supervisor)
	if err != nil {
		return NewError(KindUnavailable, PhaseVolume, spec.Name, fmt.Sprintf("reading the supervisor from %s: %v", spec.Supervisor, err))
	}
	filler := spec.Name + "-fill"
	if err := d.removeFiller(ctx, filler); err != nil {
		return err
	}
	_, err = d.cli.ContainerCreate(ctx, &container.Config{Image: spec.Supervisor, Labels: labels, Cmd: []string{"/dockside-supervise"}},
		&container.HostConfig{
			NetworkMode: "none", CapDrop: []string{"ALL"}, ReadonlyRootfs: true,
			Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: spec.Name, Target: fillerPath}},
		}, nil, nil, filler)
	if err != nil {
		return d.classify(err, PhaseVolume, spec.Name)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Base(supervisorPath), Mode: 0o555, Size: int64(len(bin)), ModTime: time.Now()})
	_, _ = tw.Write(bin) // writes into a bytes.Buffer cannot fail
	_ = tw.Close()
	copyErr := d.cli.CopyToContainer(ctx, filler, fillerPath, &buf, container.CopyToContainerOptions{})
	if err := d.removeFiller(context.WithoutCancel(ctx), filler); err != nil {
		return err
	}
	return d.classify(copyErr, PhaseVolume, spec.Name)
}

// removeFiller removes a filler container; a missing one is fine.
func (d *Docker) removeFiller(ctx context.Context, name string) error {
	err := d.cli.ContainerRemove(ctx, name, container.RemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return d.classify(err, PhaseRemove, name)
	}
	return nil
}
