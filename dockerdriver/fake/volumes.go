package fake

import (
	"context"
	"sort"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

type volume struct {
	info  dd.VolumeInfo
	files map[string]entry // by path inside the volume, without a leading slash
}

// EnsureVolume creates or adopts the tmpfs volume like the real driver.
func (f *Driver) EnsureVolume(ctx context.Context, spec dd.VolumeSpec) (dd.VolumeInfo, error) {
	return call(f, ctx, OpEnsureVolume, spec.Name, func() (dd.VolumeInfo, error) {
		if err := spec.Validate(); err != nil {
			return dd.VolumeInfo{}, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		want := dd.Labels(f.node, spec.Owner, spec.Role, "")
		if v, ok := f.volumes[spec.Name]; ok {
			if !dd.Adoptable(v.info.Labels, want) {
				return dd.VolumeInfo{}, dd.NewError(dd.KindConflict, dd.PhaseVolume, spec.Name, "the name is held by a volume Dockside did not make for this owner")
			}
			return v.snapshot(), nil
		}
		v := &volume{info: dd.VolumeInfo{Exists: true, Name: spec.Name, SizeBytes: spec.SizeBytes, Labels: want}, files: map[string]entry{}}
		f.volumes[spec.Name] = v
		return v.snapshot(), nil
	})
}

// ObserveVolume reports the volume; absent is Exists false, foreign a conflict.
func (f *Driver) ObserveVolume(ctx context.Context, name string) (dd.VolumeInfo, error) {
	return call(f, ctx, OpObserveVolume, name, func() (dd.VolumeInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		v, ok := f.volumes[name]
		switch {
		case !ok:
			return dd.VolumeInfo{}, nil
		case !f.owns(v.info.Labels):
			return dd.VolumeInfo{}, dd.NewError(dd.KindConflict, dd.PhaseObserve, name, "the volume is not Dockside's on this node")
		}
		return v.snapshot(), nil
	})
}

// RemoveVolume removes the volume; Docker refuses while any container (even a stopped one) uses it.
func (f *Driver) RemoveVolume(ctx context.Context, name string) error {
	_, err := call(f, ctx, OpRemoveVolume, name, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		v, ok := f.volumes[name]
		switch {
		case !ok:
			return struct{}{}, nil
		case !f.owns(v.info.Labels):
			return struct{}{}, dd.NewError(dd.KindConflict, dd.PhaseRemove, name, "the volume is not Dockside's on this node")
		}
		for _, c := range f.containers {
			if c.mounts(name) {
				return struct{}{}, dd.NewError(dd.KindConflict, dd.PhaseRemove, name, "Docker refused it in the current state")
			}
		}
		delete(f.volumes, name)
		return struct{}{}, nil
	})
	return err
}

// ListVolumes lists this node's volumes whose labels include match, by name.
func (f *Driver) ListVolumes(ctx context.Context, match map[string]string) ([]dd.VolumeInfo, error) {
	return call(f, ctx, OpListVolumes, "", func() ([]dd.VolumeInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []dd.VolumeInfo
		for _, v := range f.volumes {
			if f.matches(v.info.Labels, match) {
				out = append(out, v.snapshot())
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	})
}

// AddForeignVolume makes a volume of that name that Dockside did not create (no Dockside labels).
func (f *Driver) AddForeignVolume(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumes[name] = &volume{info: dd.VolumeInfo{Exists: true, Name: name, Labels: map[string]string{}}, files: map[string]entry{}}
}

func (v *volume) snapshot() dd.VolumeInfo {
	info := v.info
	info.Labels = copyLabels(v.info.Labels)
	return info
}

// forgetIfUnheld empties a tmpfs volume that no running container mounts any more, as the kernel does
// when the last tmpfs mount goes away. Called with f.mu held.
func (f *Driver) forgetIfUnheld(name string) {
	v, ok := f.volumes[name]
	if !ok {
		return
	}
	for _, c := range f.containers {
		if c.active() && c.mounts(name) {
			return
		}
	}
	v.files = map[string]entry{}
}
