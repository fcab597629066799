package dockerdriver

import (
	"context"
	"math"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// EnsureContainer creates the hardened container, or adopts the existing one with the same identity. Two
// racing ensures of one name make one container: Docker reserves names atomically and the loser adopts.
// Ensures within this process queue by name, because the loser of Docker's race can briefly see the name
// taken but the container not yet inspectable.
func (d *Docker) EnsureContainer(ctx context.Context, spec ContainerSpec) (ContainerInfo, error) {
	if err := spec.Validate(); err != nil {
		return ContainerInfo{}, err
	}
	defer d.locks.lock("container/" + spec.Name)()
	want := Labels(d.node, spec.Owner, spec.Role, spec.Service)
	if info, err := d.adoptContainer(ctx, spec.Name, want); err != nil || info.Exists {
		if err != nil {
			return info, err
		}
		return d.vetCreated(ctx, spec, info)
	}
	img, internal, err := d.checkDependencies(ctx, spec)
	if err != nil {
		return ContainerInfo{}, err
	}
	if err := d.checkWritableRoot(ctx, spec); err != nil {
		return ContainerInfo{}, err
	}
	cfg, host, netCfg := createRequest(d.node, spec, img.User)
	if internal {
		host.DNS = noUpstreamDNS
	}
	_, err = d.cli.ContainerCreate(ctx, cfg, host, netCfg, nil, spec.Name)
	if err != nil && !cerrdefs.IsConflict(err) {
		return ContainerInfo{}, d.classify(err, PhaseCreate, spec.Name)
	}
	info, err := d.adoptContainer(ctx, spec.Name, want)
	if err == nil && !info.Exists {
		err = NewError(KindUncertain, PhaseCreate, spec.Name, "created but not found afterwards")
	}
	if err != nil {
		return info, err
	}
	return d.vetCreated(ctx, spec, info)
}

func (d *Docker) adoptContainer(ctx context.Context, name string, want map[string]string) (ContainerInfo, error) {
	info, err := d.observeContainer(ctx, name, PhaseCreate)
	if err == nil && info.Exists && !Adoptable(info.Labels, want) {
		return ContainerInfo{}, NewError(KindConflict, PhaseCreate, name, "the name is held by a container Dockside did not make for this owner")
	}
	return info, err
}

// checkDependencies makes sure the image, network and volumes exist and may be used, so that Docker never
// falls back to a pull, a foreign network or an anonymous volume. It returns what the image declares, and
// whether the network is internal.
func (d *Docker) checkDependencies(ctx context.Context, spec ContainerSpec) (ImageInfo, bool, error) {
	img, err := d.InspectImage(ctx, spec.Image)
	if err != nil {
		return ImageInfo{}, false, err
	}
	if !img.Exists {
		return ImageInfo{}, false, NewError(KindNotFound, PhaseImage, spec.Image, "the image is not present on this node")
	}
	if vs := spec.UncoveredVolumes(img.Volumes); len(vs) > 0 {
		return ImageInfo{}, false, errorf(KindInvalidSpec, PhaseImage, spec.Image, "the image declares VOLUME %s; mount a workspace or scratch volume there", strings.Join(vs, ", "))
	}
	var internal bool
	if spec.Network.Name != "" {
		n, err := d.observeNetwork(ctx, spec.Network.Name, PhaseNetwork)
		switch {
		case err != nil:
			return ImageInfo{}, false, err
		case !n.Exists:
			return ImageInfo{}, false, NewError(KindNotFound, PhaseNetwork, spec.Network.Name, "the network does not exist")
		case !d.owns(n.Labels):
			return ImageInfo{}, false, NewError(KindInvalidSpec, PhaseNetwork, spec.Network.Name, "only Dockside networks of this node can be joined")
		}
		internal = n.Internal
	}
	for _, m := range spec.Mounts {
		v, err := d.observeVolume(ctx, m.Volume, PhaseVolume)
		switch {
		case err != nil:
			return ImageInfo{}, false, err
		case !v.Exists:
			return ImageInfo{}, false, NewError(KindNotFound, PhaseVolume, m.Volume, "the volume does not exist")
		case !d.owns(v.Labels):
			return ImageInfo{}, false, NewError(KindInvalidSpec, PhaseVolume, m.Volume, "only Dockside volumes of this node can be mounted")
		}
	}
	return img, internal, nil
}

// StartContainer starts a created or stopped container; a running one is left alone.
func (d *Docker) StartContainer(ctx context.Context, name string) error {
	info, err := d.owned(ctx, name, PhaseStart)
	switch {
	case err != nil:
		return err
	case !info.Exists:
		return NewError(KindNotFound, PhaseStart, name, "the container does not exist")
	case info.State == StateRunning:
		return nil
	case info.State == StatePaused:
		return NewError(KindConflict, PhaseStart, name, "the container is paused")
	}
	err = d.cli.ContainerStart(ctx, info.ID, container.StartOptions{})
	if err == nil {
		return nil
	}
	// On a loaded host runc can report a start that took effect as failed ("cannot start an already running
	// container"): the container's own state is the answer.
	if after, oerr := d.owned(ctx, name, PhaseStart); oerr == nil && after.State == StateRunning {
		return nil
	}
	return d.classify(err, PhaseStart, name)
}

// ObserveContainer reports the named container; absent is Exists false, a foreign one a conflict.
func (d *Docker) ObserveContainer(ctx context.Context, name string) (ContainerInfo, error) {
	return d.owned(ctx, name, PhaseObserve)
}

// StopContainer sends the stop signal and kills after grace; stopped or missing is fine.
func (d *Docker) StopContainer(ctx context.Context, name string, grace time.Duration) error {
	info, err := d.owned(ctx, name, PhaseStop)
	if err != nil || !info.Exists {
		return err
	}
	switch info.State {
	case StateCreated, StateExited, StateDead:
		return nil
	}
	secs := int(math.Ceil(grace.Seconds()))
	err = d.cli.ContainerStop(ctx, info.ID, container.StopOptions{Timeout: &secs})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return d.classify(err, PhaseStop, name)
}

// RemoveContainer force-removes the container; a missing one is fine.
func (d *Docker) RemoveContainer(ctx context.Context, name string) error {
	info, err := d.owned(ctx, name, PhaseRemove)
	if err != nil || !info.Exists {
		return err
	}
	err = d.cli.ContainerRemove(ctx, info.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return d.classify(err, PhaseRemove, name)
}

// ListContainers lists this node's containers (any state) whose labels include match.
func (d *Docker) ListContainers(ctx context.Context, match map[string]string) ([]ContainerInfo, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: d.labelFilter(match)})
	if err != nil {
		return nil, d.classify(err, PhaseObserve, "")
	}
	out := make([]ContainerInfo, 0, len(list))
	for _, c := range list {
		info, err := d.observeContainer(ctx, c.ID, PhaseObserve)
		if err != nil {
			return nil, err
		}
		if info.Exists { // removed between list and inspect: gone, so not listed
			out = append(out, info)
		}
	}
	return out, nil
}

// owned observes the container and refuses one this node did not make.
func (d *Docker) owned(ctx context.Context, name string, phase Phase) (ContainerInfo, error) {
	info, err := d.observeContainer(ctx, name, phase)
	if err == nil && info.Exists && !d.owns(info.Labels) {
		return ContainerInfo{}, NewError(KindConflict, phase, name, "the container is not Dockside's on this node")
	}
	return info, err
}

func (d *Docker) observeContainer(ctx context.Context, name string, phase Phase) (ContainerInfo, error) {
	c, err := d.cli.ContainerInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return ContainerInfo{}, nil
	}
	if err != nil {
		return ContainerInfo{}, d.classify(err, phase, name)
	}
	info := containerInfo(c)
	// Inspect also matches ID prefixes; only the exact name or ID counts.
	if info.Name != name && info.ID != name {
		return ContainerInfo{}, nil
	}
	return info, nil
}

func containerInfo(c container.InspectResponse) ContainerInfo {
	info := ContainerInfo{Exists: true}
	if c.ContainerJSONBase != nil {
		info.ID, info.Name, info.ImageID = c.ID, strings.TrimPrefix(c.Name, "/"), c.Image
		if s := c.State; s != nil {
			info.State, info.ExitCode, info.OOMKilled = ContainerState(s.Status), s.ExitCode, s.OOMKilled
			info.StartedAt, info.FinishedAt = dockerTime(s.StartedAt), dockerTime(s.FinishedAt)
			if s.Health != nil {
				info.Health = string(s.Health.Status)
			}
		}
		if c.HostConfig != nil && !c.HostConfig.NetworkMode.IsNone() {
			info.Network = string(c.HostConfig.NetworkMode)
		}
		if c.HostConfig != nil && c.HostConfig.Init != nil {
			info.Init = *c.HostConfig.Init
		}
		if c.HostConfig != nil {
			info.Runtime = c.HostConfig.Runtime
		}
	}
	if c.Config != nil {
		info.Image, info.Labels, info.User = c.Config.Image, c.Config.Labels, c.Config.User
	}
	for _, m := range c.Mounts {
		switch {
		case m.Type != mount.TypeVolume:
		case m.Destination == RunMountPath:
			info.RunVolume = m.Name
		case m.Destination == SupervisorMountPath && !m.RW:
			info.SupervisorVolume = m.Name
		}
	}
	if c.NetworkSettings != nil && info.Network != "" {
		if ep := c.NetworkSettings.Networks[info.Network]; ep != nil {
			info.IP = ep.IPAddress
		}
	}
	return info
}

// dockerTime reads Docker's timestamps, whose "never" is the zero time in RFC 3339.
func dockerTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}
