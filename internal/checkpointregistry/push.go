package checkpointregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/dockside-dev/dockside/internal/archive"
)

// emptyConfig is the OCI empty descriptor's content: an artifact's config that says nothing.
var emptyConfig = []byte("{}")

// Opener opens an archive's bytes from the start; the push may open it more than once (a retried upload).
type Opener func() (io.ReadCloser, error)

// Push uploads the archive a (its bytes from open) as the layer blob, unless the registry holds it already,
// then puts the Checkpoint uid's manifest, tagged with uid. The registry checks the blob against its digest.
func (r *Registry) Push(ctx context.Context, uid string, a archive.Archive, open Opener) error {
	layerDigest, err := v1.NewHash(a.Digest)
	if err != nil {
		return fmt.Errorf("archive digest %q: %w", a.Digest, err)
	}
	tag, err := r.tag(uid)
	if err != nil {
		return err
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.opts...)
	config := static.NewLayer(emptyConfig, emptyMediaType)
	for _, l := range []v1.Layer{config, &archiveLayer{digest: layerDigest, size: a.Size, open: open}} {
		if err := remote.WriteLayer(r.repo, l, opts...); err != nil {
			return fmt.Errorf("pushing the archive %s to %s: %w", a.Digest, r.repo, err)
		}
	}
	configDigest, _ := config.Digest()
	m := manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  ArtifactType,
		Config:        v1.Descriptor{MediaType: emptyMediaType, Digest: configDigest, Size: int64(len(emptyConfig))},
		Layers:        []v1.Descriptor{{MediaType: LayerMediaType, Digest: layerDigest, Size: a.Size}},
		Annotations:   map[string]string{UIDAnnotation: uid},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding the manifest of Checkpoint %s: %w", uid, err)
	}
	if err := remote.Put(tag, rawManifest(raw), opts...); err != nil {
		return fmt.Errorf("pushing the manifest of Checkpoint %s to %s: %w", uid, r.repo, err)
	}
	return nil
}

// manifest is an OCI image manifest with the artifactType field (the library's type lacks it).
type manifest struct {
	SchemaVersion int64             `json:"schemaVersion"`
	MediaType     types.MediaType   `json:"mediaType"`
	ArtifactType  string            `json:"artifactType"`
	Config        v1.Descriptor     `json:"config"`
	Layers        []v1.Descriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations"`
}

// rawManifest is a manifest ready to put.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// archiveLayer is an archive as a layer: stored as it is, so that its digest is the archive's.
type archiveLayer struct {
	digest v1.Hash
	size   int64
	open   Opener
}

func (l *archiveLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *archiveLayer) DiffID() (v1.Hash, error)             { return l.digest, nil }
func (l *archiveLayer) Compressed() (io.ReadCloser, error)   { return l.open() }
func (l *archiveLayer) Uncompressed() (io.ReadCloser, error) { return l.open() }
func (l *archiveLayer) Size() (int64, error)                 { return l.size, nil }
func (l *archiveLayer) MediaType() (types.MediaType, error)  { return LayerMediaType, nil }
