package fake

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

type container struct {
	info   dd.ContainerInfo
	spec   dd.ContainerSpec
	logs   []byte
	rootfs map[string]entry // files outside volume mounts, by path without a leading slash
}

func (c *container) active() bool {
	return c.info.State == dd.StateRunning || c.info.State == dd.StatePaused
}

func (c *container) mounts(volume string) bool {
	for _, m := range c.spec.Mounts {
		if m.Volume == volume {
			return true
		}
	}
	return false
}

// onReadOnlyRoot tells whether p lies on the container's root file system, outside every mount, while that
// root is read-only (dockerdriver.ContainerSpec.WritableRootBytes).
func (c *container) onReadOnlyRoot(p string) bool {
	if c.spec.WritableRootBytes > 0 {
		return false
	}
	var targets []string
	for _, m := range c.spec.Mounts {
		targets = append(targets, m.Target)
	}
	for _, t := range c.spec.Tmpfs {
		targets = append(targets, t.Target)
	}
	for _, t := range targets {
		if p == t || strings.HasPrefix(p, t+"/") {
			return false
		}
	}
	return true
}

func (c *container) snapshot() dd.ContainerInfo {
	info := c.info
	info.Labels = copyLabels(c.info.Labels)
	return info
}

// EnsureContainer creates (state created) or adopts the container like the real driver, checking the
// image, network and volumes it needs.
func (f *Driver) EnsureContainer(ctx context.Context, spec dd.ContainerSpec) (dd.ContainerInfo, error) {
	return call(f, ctx, OpEnsureContainer, spec.Name, func() (dd.ContainerInfo, error) {
		if err := spec.Validate(); err != nil {
			return dd.ContainerInfo{}, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		want := dd.Labels(f.node, spec.Owner, spec.Role, spec.Service)
		if c, ok := f.containers[spec.Name]; ok {
			if !dd.Adoptable(c.info.Labels, want) {
				return dd.ContainerInfo{}, dd.NewError(dd.KindConflict, dd.PhaseCreate, spec.Name, "the name is held by a container Dockside did not make for this owner")
			}
			return c.snapshot(), nil
		}
		if err := f.checkDependencies(spec); err != nil {
			return dd.ContainerInfo{}, err
		}
		if err := dd.WritableRootRefusal(spec, f.storage); err != nil {
			return dd.ContainerInfo{}, err
		}
		if spec.Runtime != "" && !slices.Contains(f.runtimes, spec.Runtime) {
			return dd.ContainerInfo{}, dd.NewError(dd.KindInvalidSpec, dd.PhaseCreate, spec.Name, "the daemon offers no runtime "+spec.Runtime)
		}
		f.nextID++
		c := &container{spec: spec, rootfs: map[string]entry{}, info: dd.ContainerInfo{
			Exists: true, ID: fmt.Sprintf("ctr%04d", f.nextID), Name: spec.Name, Image: spec.Image,
			ImageID: f.images[spec.Image].ID, State: dd.StateCreated, Network: spec.Network.Name, Labels: want,
			User: dd.RunAs(spec, f.images[spec.Image].User), Init: spec.Init, Runtime: spec.Runtime,
			RunVolume: mountedAt(spec, dd.RunMountPath, false), SupervisorVolume: mountedAt(spec, dd.SupervisorMountPath, true),
		}}
		f.containers[spec.Name] = c
		return c.snapshot(), nil
	})
}

// checkDependencies mirrors the real driver: image present and without uncovered VOLUMEs, network and
// volumes present and Dockside's. Called with f.mu held.
func (f *Driver) checkDependencies(spec dd.ContainerSpec) error {
	img, ok := f.images[spec.Image]
	if !ok {
		return dd.NewError(dd.KindNotFound, dd.PhaseImage, spec.Image, "the image is not present on this node")
	}
	if vs := spec.UncoveredVolumes(img.Volumes); len(vs) > 0 {
		return dd.NewError(dd.KindInvalidSpec, dd.PhaseImage, spec.Image, fmt.Sprintf("the image declares VOLUME %v", vs))
	}
	if name := spec.Network.Name; name != "" {
		n, ok := f.network(name)
		switch {
		case !ok:
			return dd.NewError(dd.KindNotFound, dd.PhaseNetwork, name, "the network does not exist")
		case !f.owns(n.info.Labels):
			return dd.NewError(dd.KindInvalidSpec, dd.PhaseNetwork, name, "only Dockside networks of this node can be joined")
		}
	}
	for _, m := range spec.Mounts {
		v, ok := f.volumes[m.Volume]
		switch {
		case !ok:
			return dd.NewError(dd.KindNotFound, dd.PhaseVolume, m.Volume, "the volume does not exist")
		case !f.owns(v.info.Labels):
			return dd.NewError(dd.KindInvalidSpec, dd.PhaseVolume, m.Volume, "only Dockside volumes of this node can be mounted")
		}
	}
	return nil
}

// StartContainer moves a created or exited container to running; running is left alone.
func (f *Driver) StartContainer(ctx context.Context, name string) error {
	_, err := call(f, ctx, OpStartContainer, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseStart)
		if err != nil {
			return struct{}{}, err
		}
		switch c.info.State {
		case dd.StateRunning:
			return struct{}{}, nil
		case dd.StatePaused:
			return struct{}{}, dd.NewError(dd.KindConflict, dd.PhaseStart, name, "the container is paused")
		}
		if c.spec.Init && f.noInit {
			return struct{}{}, dd.NewError(dd.KindUncertain, dd.PhaseStart, name, "the daemon has no init binary")
		}
		c.info.State, c.info.ExitCode, c.info.OOMKilled = dd.StateRunning, 0, false
		c.info.StartedAt, c.info.FinishedAt = time.Now(), time.Time{}
		if n, ok := f.network(c.spec.Network.Name); ok {
			c.info.IP = n.allocateIP()
		}
		f.emit(c, dd.EventStart)
		return struct{}{}, nil
	})
	return err
}

// ObserveContainer reports the container; absent is Exists false, foreign a conflict.
func (f *Driver) ObserveContainer(ctx context.Context, name string) (dd.ContainerInfo, error) {
	return call(f, ctx, OpObserveContainer, name, func() (dd.ContainerInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, ok := f.container(name)
		switch {
		case !ok:
			return dd.ContainerInfo{}, nil
		case !f.owns(c.info.Labels):
			return dd.ContainerInfo{}, dd.NewError(dd.KindConflict, dd.PhaseObserve, name, "the container is not Dockside's on this node")
		}
		return c.snapshot(), nil
	})
}

// StopContainer stops a running or paused container: exit code 143 (SIGTERM honoured), or 137 with no
// grace. Stopped or missing is fine.
func (f *Driver) StopContainer(ctx context.Context, name string, grace time.Duration) error {
	_, err := call(f, ctx, OpStopContainer, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseStop)
		if err != nil || !c.active() {
			return struct{}{}, ignoreNotFound(err)
		}
		code := 143
		if grace <= 0 {
			code = 137
		}
		f.exit(c, code, false)
		return struct{}{}, nil
	})
	return err
}

// RemoveContainer force-removes the container; missing is fine.
func (f *Driver) RemoveContainer(ctx context.Context, name string) error {
	_, err := call(f, ctx, OpRemoveContainer, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseRemove)
		if err != nil {
			return struct{}{}, ignoreNotFound(err)
		}
		if c.active() {
			f.exit(c, 137, false)
		}
		delete(f.containers, c.info.Name)
		f.forgetExecs(c.info.ID)
		f.emit(c, dd.EventDestroy)
		return struct{}{}, nil
	})
	return err
}

// ListContainers lists this node's containers whose labels include match, by name.
func (f *Driver) ListContainers(ctx context.Context, match map[string]string) ([]dd.ContainerInfo, error) {
	return call(f, ctx, OpListContainers, "", func() ([]dd.ContainerInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []dd.ContainerInfo
		for _, c := range f.containers {
			if f.matches(c.info.Labels, match) {
				out = append(out, c.snapshot())
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	})
}

// PauseContainer freezes a running container; paused is left alone.
func (f *Driver) PauseContainer(ctx context.Context, name string) error {
	return f.setPaused(ctx, OpPauseContainer, name, true)
}

// UnpauseContainer thaws a paused container; running is left alone.
func (f *Driver) UnpauseContainer(ctx context.Context, name string) error {
	return f.setPaused(ctx, OpUnpauseContainer, name, false)
}

func (f *Driver) setPaused(ctx context.Context, op Op, name string, paused bool) error {
	_, err := call(f, ctx, op, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhasePause)
		switch {
		case err != nil:
			return struct{}{}, err
		case !c.active():
			return struct{}{}, dd.NewError(dd.KindConflict, dd.PhasePause, name, fmt.Sprintf("the container is %s, not running", c.info.State))
		case (c.info.State == dd.StatePaused) == paused:
			return struct{}{}, nil
		}
		state, ev := dd.StateRunning, dd.EventUnpause
		if paused {
			state, ev = dd.StatePaused, dd.EventPause
		}
		c.info.State = state
		f.emit(c, ev)
		return struct{}{}, nil
	})
	return err
}

// Exit makes the container's main process exit with code, as if the command finished or was killed.
func (f *Driver) Exit(name string, code int) error {
	return f.terminate(name, code, false)
}

// OOM makes the kernel's OOM killer end the container: an oom event, then die with 137 and OOMKilled.
func (f *Driver) OOM(name string) error {
	return f.terminate(name, 137, true)
}

func (f *Driver) terminate(name string, code int, oom bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[name]
	if !ok || !c.active() {
		return fmt.Errorf("fake: container %q is not running", name)
	}
	if oom {
		f.emit(c, dd.EventOOM)
	}
	f.exit(c, code, oom)
	return nil
}

// WriteLogs appends output to the container's log, as if its command had written it.
func (f *Driver) WriteLogs(name string, output []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[name]
	if !ok {
		return fmt.Errorf("fake: no container %q", name)
	}
	c.logs = append(c.logs, output...)
	return nil
}

// AddForeignContainer makes a container of that name that Dockside did not create (no Dockside labels).
func (f *Driver) AddForeignContainer(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.containers[name] = &container{rootfs: map[string]entry{}, info: dd.ContainerInfo{
		Exists: true, ID: "foreign-" + name, Name: name, State: dd.StateRunning, Labels: map[string]string{},
	}}
}

// LogTail returns the last maxBytes of what WriteLogs wrote.
func (f *Driver) LogTail(ctx context.Context, name string, maxBytes int) (dd.LogTail, error) {
	return call(f, ctx, OpLogTail, name, func() (dd.LogTail, error) {
		if maxBytes <= 0 {
			return dd.LogTail{}, dd.NewError(dd.KindInvalidSpec, dd.PhaseObserve, name, "a positive byte limit is required")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		c, err := f.existing(name, dd.PhaseObserve)
		if err != nil {
			return dd.LogTail{}, err
		}
		cut := max(0, len(c.logs)-maxBytes)
		return dd.LogTail{Data: append([]byte(nil), c.logs[cut:]...), Cut: int64(cut)}, nil
	})
}

// exit ends a running or paused container. Called with f.mu held.
func (f *Driver) exit(c *container, code int, oom bool) {
	c.info.State, c.info.ExitCode, c.info.OOMKilled = dd.StateExited, code, oom
	c.info.FinishedAt, c.info.IP = time.Now(), ""
	f.emit(c, dd.EventDie)
	f.endExecs(c.info.ID)
	for _, m := range c.spec.Mounts {
		f.forgetIfUnheld(m.Volume)
	}
}

// existing finds an owned container by name or ID, NotFound or Conflict otherwise. Called with f.mu held.
func (f *Driver) existing(name string, phase dd.Phase) (*container, error) {
	c, ok := f.container(name)
	switch {
	case !ok:
		return nil, dd.NewError(dd.KindNotFound, phase, name, "the container does not exist")
	case !f.owns(c.info.Labels):
		return nil, dd.NewError(dd.KindConflict, phase, name, "the container is not Dockside's on this node")
	}
	return c, nil
}

// container finds a container by its name or its ID. Called with f.mu held.
func (f *Driver) container(ref string) (*container, bool) {
	return byNameOrID(f.containers, ref, func(c *container) string { return c.info.ID })
}

func ignoreNotFound(err error) error {
	if dd.IsNotFound(err) {
		return nil
	}
	return err
}
