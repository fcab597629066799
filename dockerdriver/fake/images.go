package fake

import (
	"cmp"
	"context"
	"sort"
	"strings"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// RegistryImage is an image that a pull through the fake can fetch.
type RegistryImage struct {
	Info   dd.ImageInfo  // what the node holds once it is pulled
	Digest string        // the digest the pull reports; "" reports the reference's own pin, if any
	Delay  time.Duration // how long the pull takes, in four progress steps; ctx ending first cuts it short
	// Packed is the compressed size of its layers, all announced with the first progress step; 0: 4 MiB.
	Packed int64
	Auth   *dd.RegistryAuth // the credentials the registry insists on; nil lets anyone pull
	// OtherAuth are further credentials it takes as well as Auth: other users of a private image.
	OtherAuth []dd.RegistryAuth
}

// pullSteps is how many progress reports (layers) a fake pull makes.
const pullSteps = 4

// AddRegistryImage makes ref pullable. Pulls of references never added fail as NotFound, like a registry
// without the image; FailNext and HangNext on OpPullImage inject other failures.
func (f *Driver) AddRegistryImage(ref string, img RegistryImage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.registry[ref] = img
}

// PullImage fetches ref from the fake registry: after its delay the image is present, as the real daemon
// leaves it. Failures carry the real driver's words.
func (f *Driver) PullImage(ctx context.Context, ref string, auth *dd.RegistryAuth, progress func(dd.PullProgress)) (dd.PullResult, error) {
	return call(f, ctx, OpPullImage, ref, func() (dd.PullResult, error) {
		f.mu.Lock()
		img, ok := f.registry[ref]
		f.mu.Unlock()
		switch {
		case !ok:
			return dd.PullResult{}, dd.NewError(dd.KindNotFound, dd.PhaseImage, ref, "the registry has no such image, or it needs credentials")
		case img.Auth != nil && !img.takes(auth):
			return dd.PullResult{}, dd.NewError(dd.KindConflict, dd.PhaseImage, ref, "the registry refused the credentials")
		}
		packed := cmp.Or(img.Packed, pullSteps<<20)
		if progress != nil { // the layers, announced before any is fetched
			progress(dd.PullProgress{Layers: pullSteps, BytesTotal: packed})
		}
		for i := 1; i <= pullSteps; i++ {
			select {
			case <-ctx.Done():
			case <-time.After(img.Delay / pullSteps):
			}
			// Checked apart from the select, which picks at random when a zero delay and a cancelled ctx are
			// both ready: a cancelled pull brings nothing, as Docker's does.
			if ctx.Err() != nil {
				f.unpacked(ref, 0)
				return dd.PullResult{}, dd.NewError(dd.KindUncertain, dd.PhaseImage, ref, "the pull did not finish before its deadline")
			}
			f.unpacked(ref, img.Info.Size*int64(i)/pullSteps) // each step a layer fetched and unpacked
			if progress != nil {
				progress(dd.PullProgress{Layers: pullSteps, LayersDone: i, BytesDone: packed * int64(i) / pullSteps, BytesTotal: packed})
			}
		}
		f.unpacked(ref, 0)
		f.AddImage(ref, img.Info)
		digest := img.Digest
		if _, pin, ok := strings.Cut(ref, "@"); ok && digest == "" {
			digest = pin
		}
		return dd.PullResult{Digest: digest}, nil
	})
}

// unpacked notes what the pull of ref has unpacked so far on the disk; 0 once it ended (a cancelled pull
// leaves nothing, as Docker's releases the layers no image holds).
func (f *Driver) unpacked(ref string, bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if bytes == 0 {
		delete(f.unpacking, ref)
		return
	}
	f.unpacking[ref] = bytes
}

// DiskSize is the size of the fake's disk of images (Disk).
const DiskSize = 1 << 40

// Disk reports the size and free bytes of the file system Docker keeps images on, as statfs would: the
// images' sizes and what the pulls running have unpacked so far are what it holds.
func (f *Driver) Disk() (size, free uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var used int64
	for _, img := range f.images {
		used += img.Size
	}
	for _, n := range f.unpacking {
		used += n
	}
	return DiskSize, uint64(max(DiskSize-used, 0)), nil //nolint:gosec // not negative
}

// RemoveImage forgets ref, as the real daemon removes it: refused (a Conflict) while a container of this
// fake was made from it.
func (f *Driver) RemoveImage(ctx context.Context, ref string) error {
	_, err := call(f, ctx, OpRemoveImage, ref, func() (struct{}, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.containers {
			if c.spec.Image == ref {
				return struct{}{}, dd.NewError(dd.KindConflict, dd.PhaseImage, ref, "Docker refused it in the current state")
			}
		}
		delete(f.images, ref)
		return struct{}{}, nil
	})
	return err
}

// ListImages reports the images added or pulled that carry every label of match, one per image ID with all
// its names, in use when a container of this fake names one of them.
func (f *Driver) ListImages(ctx context.Context, match map[string]string) ([]dd.ImageSummary, error) {
	return call(f, ctx, OpListImages, "", func() ([]dd.ImageSummary, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		byID := map[string]*dd.ImageSummary{}
		for ref, info := range f.images {
			if !hasLabels(info.Labels, match) {
				continue
			}
			img := byID[info.ID]
			if img == nil {
				img = &dd.ImageSummary{ID: info.ID, Size: info.Size}
				byID[info.ID] = img
			}
			img.Refs = append(img.Refs, ref)
			for _, c := range f.containers {
				img.InUse = img.InUse || c.spec.Image == ref
			}
		}
		out := make([]dd.ImageSummary, 0, len(byID))
		for _, img := range byID {
			sort.Strings(img.Refs)
			out = append(out, *img)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out, nil
	})
}

func hasLabels(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// takes tells whether the registry lets auth (nil: none) pull a private image. Like Docker's, it asks
// whether or not the node holds the image already.
func (img RegistryImage) takes(auth *dd.RegistryAuth) bool {
	if auth == nil {
		return false
	}
	for _, ok := range append([]dd.RegistryAuth{*img.Auth}, img.OtherAuth...) {
		if sameCredentials(*auth, ok) {
			return true
		}
	}
	return false
}

// sameCredentials compares what a registry checks; ServerAddress only says where credentials are for.
func sameCredentials(a, b dd.RegistryAuth) bool {
	return a.Username == b.Username && a.Password == b.Password && a.IdentityToken == b.IdentityToken
}
