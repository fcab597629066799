package checkpointregistry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/dockside-dev/dockside/internal/archive"
)

// tagPrefix starts the tag of every Checkpoint's manifest, so that Delete can tell them from other tags.
const tagPrefix = "ckpt-"

// uidPattern is a Checkpoint's UID, short enough for a tag (at most 128 characters) with tagPrefix.
var uidPattern = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9]{0,99}$`)

// Delete removes the Checkpoint uid's manifest (its tag, then the manifest by digest: registries differ in
// which of the two removes what), and the archive's blob when no other Checkpoint's manifest in the
// repository names it. A Checkpoint with no manifest is not an error.
//
// Two Checkpoints of one archive deleted at the same moment by two agents may each still see the other's
// manifest and both leave the blob: the registry's garbage collection takes such blobs.
func (r *Registry) Delete(ctx context.Context, uid string) error {
	tag, err := r.tag(uid)
	if err != nil {
		return err
	}
	opts := append([]remote.Option{remote.WithContext(ctx)}, r.opts...)
	desc, err := remote.Head(tag, opts...)
	if notFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the manifest of Checkpoint %s in %s: %w", uid, r.repo, err)
	}
	layer, err := r.manifestLayer(tag, opts)
	if err != nil && !notFound(err) {
		return err
	}
	if err := remote.Delete(tag, opts...); err != nil && !notFound(err) && !unsupported(err) {
		return fmt.Errorf("deleting the tag of Checkpoint %s in %s: %w", uid, r.repo, err)
	}
	if err := remote.Delete(r.repo.Digest(desc.Digest.String()), opts...); err != nil && !notFound(err) {
		return fmt.Errorf("deleting the manifest of Checkpoint %s in %s: %w", uid, r.repo, err)
	}
	if layer.Digest == (v1.Hash{}) {
		return nil
	}
	named, err := r.named(layer.Digest, opts)
	if err != nil || named {
		return err
	}
	blob := r.repo.Digest(layer.Digest.String())
	if err := r.deleteBlob(ctx, blob); err != nil && !notFound(err) && !unsupported(err) {
		return fmt.Errorf("deleting the archive %s in %s: %w", layer.Digest, r.repo, err)
	}
	return nil
}

// named tells whether any Checkpoint's manifest left in the repository names the blob.
func (r *Registry) named(blob v1.Hash, opts []remote.Option) (bool, error) {
	tags, err := remote.List(r.repo, opts...)
	if notFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("listing the Checkpoints in %s: %w", r.repo, err)
	}
	for _, t := range tags {
		if !strings.HasPrefix(t, tagPrefix) {
			continue
		}
		layer, err := r.manifestLayer(r.repo.Tag(t), opts)
		if notFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return false, err
		}
		if layer.Digest == blob {
			return true, nil
		}
	}
	return false, nil
}

// tag is the tag of the Checkpoint uid's manifest.
func (r *Registry) tag(uid string) (name.Tag, error) {
	if !uidPattern.MatchString(uid) {
		return name.Tag{}, fmt.Errorf("%q is not a Checkpoint UID", uid)
	}
	return r.repo.Tag(tagPrefix + uid), nil
}

func notFound(err error) bool {
	var terr *transport.Error
	return err != nil && (errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound || errors.Is(err, archive.ErrMissing))
}

// unsupported: the registry does not delete this kind of thing (some registries delete manifests by digest
// only, some delete no blobs).
func unsupported(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && (terr.StatusCode == http.StatusMethodNotAllowed || terr.StatusCode == http.StatusBadRequest && hasCode(terr, transport.UnsupportedErrorCode))
}

func hasCode(terr *transport.Error, code transport.ErrorCode) bool {
	for _, d := range terr.Errors {
		if d.Code == code {
			return true
		}
	}
	return false
}

// deleteBlob deletes a blob (the library deletes manifests only): DELETE /v2/<repository>/blobs/<digest>.
func (r *Registry) deleteBlob(ctx context.Context, blob name.Digest) error {
	rt, err := transport.NewWithContext(ctx, blob.Context().Registry, r.auth, r.transport, []string{blob.Context().Scope(transport.DeleteScope)})
	if err != nil {
		return fmt.Errorf("authorizing the delete: %w", err)
	}
	u := url.URL{
		Scheme: blob.Context().Scheme(),
		Host:   blob.Context().RegistryStr(),
		Path:   fmt.Sprintf("/v2/%s/blobs/%s", blob.Context().RepositoryStr(), blob.DigestStr()),
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.String(), nil)
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return fmt.Errorf("sending the request: %w", err)
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK, http.StatusAccepted); err != nil {
		return fmt.Errorf("the registry refused the delete: %w", err)
	}
	return nil
}
