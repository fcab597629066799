package dockerdriver

import (
	"context"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/volume"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// EnsureVolume creates the tmpfs-backed local volume, or adopts the one of that name with the same identity;
// a supervisor volume (VolumeSpec.Supervisor) is on disk and filled each time.
func (d *Docker) EnsureVolume(ctx context.Context, spec VolumeSpec) (VolumeInfo, error) {
	if err := spec.Validate(); err != nil {
		return VolumeInfo{}, err
	}
	defer d.locks.lock("volume/" + spec.Name)()
	want := Labels(d.node, spec.Owner, spec.Role, "")
	info, err := d.adoptVolume(ctx, spec.Name, want)
	if err == nil && !info.Exists {
		info, err = d.createVolume(ctx, spec, want)
	}
	if err == nil && spec.Supervisor != "" {
		err = d.fillSupervisorVolume(ctx, spec, want)
	}
	return info, err
}

// createVolume creates the volume, tmpfs-backed unless it is a supervisor volume. Creating a name that
// exists returns the existing volume, so a racing creator is caught by the adopt check after it.
func (d *Docker) createVolume(ctx context.Context, spec VolumeSpec, want map[string]string) (VolumeInfo, error) {
	if spec.Supervisor != "" {
		if err := d.createSupervisorVolume(ctx, spec, want); err != nil {
			return VolumeInfo{}, err
		}
	} else if _, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{
		Name:       spec.Name,
		Driver:     "local",
		DriverOpts: tmpfsOptions(spec.SizeBytes, volumeRootMode(spec.Role)),
		Labels:     want,
	}); err != nil {
		return VolumeInfo{}, d.classify(err, PhaseVolume, spec.Name)
	}
	info, err := d.adoptVolume(ctx, spec.Name, want)
	if err == nil && !info.Exists {
		err = NewError(KindUncertain, PhaseVolume, spec.Name, "created but not found afterwards")
	}
	return info, err
}

func (d *Docker) adoptVolume(ctx context.Context, name string, want map[string]string) (VolumeInfo, error) {
	info, err := d.observeVolume(ctx, name, PhaseVolume)
	if err == nil && info.Exists && !Adoptable(info.Labels, want) {
		return VolumeInfo{}, NewError(KindConflict, PhaseVolume, name, "the name is held by a volume Dockside did not make for this owner")
	}
	return info, err
}

// ObserveVolume reports the named volume; absent is Exists false, a foreign one a conflict.
func (d *Docker) ObserveVolume(ctx context.Context, name string) (VolumeInfo, error) {
	info, err := d.observeVolume(ctx, name, PhaseObserve)
	if err == nil && info.Exists && !d.owns(info.Labels) {
		return VolumeInfo{}, NewError(KindConflict, PhaseObserve, name, "the volume is not Dockside's on this node")
	}
	return info, err
}

func (d *Docker) observeVolume(ctx context.Context, name string, phase Phase) (VolumeInfo, error) {
	v, err := d.cli.VolumeInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return VolumeInfo{}, nil
	}
	if err != nil {
		return VolumeInfo{}, d.classify(err, phase, name)
	}
	return volumeInfo(v), nil
}

// RemoveVolume removes the volume; a missing one is fine, one still mounted is a conflict.
func (d *Docker) RemoveVolume(ctx context.Context, name string) error {
	info, err := d.ObserveVolume(ctx, name)
	if err != nil || !info.Exists {
		return phased(err, PhaseRemove)
	}
	if err := d.cli.VolumeRemove(ctx, name, false); err != nil && !cerrdefs.IsNotFound(err) {
		return d.classify(err, PhaseRemove, name)
	}
	return nil
}

// ListVolumes lists this node's volumes whose labels include match.
func (d *Docker) ListVolumes(ctx context.Context, match map[string]string) ([]VolumeInfo, error) {
	resp, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: d.labelFilter(match)})
	if err != nil {
		return nil, d.classify(err, PhaseObserve, "")
	}
	out := make([]VolumeInfo, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		out = append(out, volumeInfo(*v))
	}
	return out, nil
}

// tmpfsOptions are the local driver's options for a size-limited tmpfs volume (mount -t tmpfs -o size=N)
// whose root has mode (volumeRootMode). nosuid and nodev leave set-user-ID files and device nodes in it
// without effect, as Docker's own tmpfs mounts do.
func tmpfsOptions(sizeBytes int64, mode string) map[string]string {
	return map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=" + strconv.FormatInt(sizeBytes, 10) + ",mode=" + mode + ",nosuid,nodev"}
}

// volumeRootMode is the mode of a volume's root, which is root's. A workspace's is writable by every user,
// sticky like /tmp: the user a container runs as depends on its image (see RunAs), which may change from one
// topology generation to the next while the workspace stays. A run volume's is not: it holds the supervisor,
// which the agent installs before the first Execution (installSupervisor), and a command that could write
// there first could plant a supervisor of its own.
func volumeRootMode(role string) string {
	if role == dsv1alpha1.RoleRun {
		return "0755"
	}
	return "1777"
}

func volumeInfo(v volume.Volume) VolumeInfo {
	info := VolumeInfo{Exists: true, Name: v.Name, Labels: v.Labels, Mountpoint: v.Mountpoint}
	for _, o := range strings.Split(v.Options["o"], ",") {
		if s, ok := strings.CutPrefix(o, "size="); ok {
			info.SizeBytes, _ = strconv.ParseInt(s, 10, 64)
		}
	}
	return info
}
