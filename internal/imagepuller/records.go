package imagepuller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Records remember which credentials brought each image the agent pulled, so that an image one namespace
// pulled with its credentials is used by another only once that namespace's own credentials were verified
// for it (docs/design/containment.md, "Pull credentials stay in their namespace"). An image is known by the ID
// Docker gives it together with the repository it was pulled from: the same content pulled as a private
// image and present as a local build of another name is the local build there.
//
// An image the agent never pulled (no record of its ID and repository) is node-local, preloaded or built on
// the node, and needs no credentials, unless the agent once pulled its repository with credentials: it marks
// the repository so before such a pull, so that a crash between the pull and its record, or a record that
// could not be written, leaves the image needing verification rather than free for all.
//
// Credentials are kept as SHA-256 hashes, never as they are. The records live in one file (mode 0600),
// rewritten whole at each change; "" keeps them in memory only, for the life of the agent.
type Records struct {
	path string

	mu   sync.Mutex
	file recordFile
}

// recordFile is what the records file holds.
type recordFile struct {
	// Private are the repositories the agent pulled (or began to pull) with credentials.
	Private []string `json:"privateRepositories"`
	// Images are, by image ID and then repository, who may use what the agent pulled.
	Images map[string]map[string]*pullRecord `json:"images"`
}

// pullRecord says who may use one image of one repository.
type pullRecord struct {
	Public      bool     `json:"public,omitempty"`      // a pull without credentials brought it
	Credentials []string `json:"credentials,omitempty"` // hashes of the credentials that pulled it
}

// OpenRecords reads the records kept at path, if any. A file that cannot be read is an error, not a fresh
// start: every image it protects would otherwise look node-local.
func OpenRecords(path string) (*Records, error) {
	r := &Records{path: path, file: recordFile{Images: map[string]map[string]*pullRecord{}}}
	if path == "" {
		return r, nil
	}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return r, nil
	case err != nil:
		return nil, fmt.Errorf("reading the image pull records: %w", err)
	}
	if err := json.Unmarshal(raw, &r.file); err != nil {
		return nil, fmt.Errorf("the image pull records in %s are not readable (remove the file only if no image pulled with credentials is on the node): %w", path, err)
	}
	if r.file.Images == nil {
		r.file.Images = map[string]map[string]*pullRecord{}
	}
	return r, nil
}

// Usable tells whether an image the node holds, of ID id and named ref, may be used with auth (nil: none)
// without asking the registry.
func (r *Records) Usable(ref, id string, auth *dd.RegistryAuth) bool {
	repo := Repository(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.file.Images[id][repo]
	if rec == nil {
		return !slices.Contains(r.file.Private, repo)
	}
	return rec.Public || (auth != nil && slices.Contains(rec.Credentials, credentialHash(*auth)))
}

// pulling marks ref's repository as pulled with credentials, before such a pull begins.
func (r *Records) pulling(ref string) error {
	repo := Repository(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.file.Private, repo) {
		return nil
	}
	r.file.Private = append(r.file.Private, repo)
	return r.save()
}

// pulled records that a pull of ref with auth (nil: none) brought the image of ID id. The record holds in
// memory even when it cannot be written; the error says it was not.
func (r *Records) pulled(ref, id string, auth *dd.RegistryAuth) error {
	repo := Repository(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	byRepo := r.file.Images[id]
	if byRepo == nil {
		byRepo = map[string]*pullRecord{}
		r.file.Images[id] = byRepo
	}
	rec := byRepo[repo]
	if rec == nil {
		rec = &pullRecord{}
		byRepo[repo] = rec
	}
	switch {
	case auth == nil && rec.Public:
		return nil
	case auth == nil:
		rec.Public = true
	case slices.Contains(rec.Credentials, credentialHash(*auth)):
		return nil
	default:
		rec.Credentials = append(rec.Credentials, credentialHash(*auth))
	}
	return r.save()
}

// save writes the records to a new file, synced, and renames it over the old one, so that a crash leaves one
// or the other whole.
func (r *Records) save() error {
	if r.path == "" {
		return nil
	}
	raw, err := json.Marshal(r.file)
	if err != nil {
		return fmt.Errorf("encoding the image pull records: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("writing the image pull records: %w", err)
	}
	tmp := r.path + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("writing the image pull records: %w", err)
	}
	_, err = f.Write(raw)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the image pull records: %w", err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return fmt.Errorf("writing the image pull records: %w", err)
	}
	return nil
}

// credentialHash stands for what a registry checks of credentials.
func credentialHash(a dd.RegistryAuth) string {
	sum := sha256.Sum256([]byte(RegistryHost(a.ServerAddress) + "\x00" + a.Username + "\x00" + a.Password + "\x00" + a.IdentityToken))
	return hex.EncodeToString(sum[:])
}
