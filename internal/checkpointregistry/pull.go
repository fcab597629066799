package checkpointregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/dockside-dev/dockside/internal/archive"
)

// Pull writes the archive a of the Checkpoint uid into w, byte for byte, and checks what it wrote against
// a's digest and size. The Checkpoint's manifest must be there and name a as its layer: archive.ErrMissing
// when the manifest or the blob is gone, archive.ErrCorrupt when the manifest names other bytes or the
// bytes do not match the digest (w then holds bytes that must not be used).
func (r *Registry) Pull(ctx context.Context, uid string, a archive.Archive, w io.Writer) error {
	layerDigest, err := v1.NewHash(a.Digest)
	if err != nil {
		return fmt.Errorf("%w: digest %q", archive.ErrCorrupt, a.Digest)
	}
	tag, err := r.tag(uid)
	if err != nil {
		return err
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.opts...)
	layer, err := r.manifestLayer(tag, opts)
	if err != nil {
		return err
	}
	if layer.Digest != layerDigest || layer.Size != a.Size {
		return fmt.Errorf("%w: the registry's manifest of Checkpoint %s names %s (%d bytes), not %s (%d bytes)",
			archive.ErrCorrupt, uid, layer.Digest, layer.Size, a.Digest, a.Size)
	}
	blob, err := remote.Layer(r.repo.Digest(a.Digest), opts...)
	if err != nil {
		return fmt.Errorf("reading the archive %s from %s: %w", a.Digest, r.repo, err)
	}
	rc, err := blob.Compressed()
	if err != nil {
		return missingOr(err)
	}
	defer rc.Close()
	h := sha256.New()
	// One byte past the size tells a longer blob from a complete one. The library checks the digest too,
	// failing the last read: an error after all the bytes came is a mismatch, one before them a lost stream.
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(rc, a.Size+1))
	if err != nil && n < a.Size {
		return missingOr(err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); err != nil || n != a.Size || got != a.Digest {
		return fmt.Errorf("%w: the registry sent %d bytes with digest %s for %s (%d bytes)", archive.ErrCorrupt, n, got, a.Digest, a.Size)
	}
	return nil
}

// manifestLayer reads the Checkpoint's manifest at tag and returns its one layer.
func (r *Registry) manifestLayer(tag name.Tag, opts []remote.Option) (v1.Descriptor, error) {
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		return v1.Descriptor{}, missingOr(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil || len(m.Layers) != 1 || m.Layers[0].MediaType != LayerMediaType {
		return v1.Descriptor{}, fmt.Errorf("%w: %s is not a Checkpoint's manifest", archive.ErrCorrupt, tag)
	}
	return m.Layers[0], nil
}

// missingOr maps the registry's "not found" to archive.ErrMissing.
func missingOr(err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return fmt.Errorf("%w: %w", archive.ErrMissing, err)
	}
	return err
}
