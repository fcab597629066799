// Package archive is the node's store of Checkpoint archives: tar files kept content-addressed (sha256) in a
// folder of the agent's, with a reference per Checkpoint so that an archive two Checkpoints share is removed
// only with the last of them.
//
// Layout under the store's folder:
//
//	sha256/<hex>          an archive, named by the sha256 of its bytes
//	sha256/<hex>.corrupt  an archive whose bytes no longer match its name, kept aside so that it is never used
//	refs/<hex>/<ref>      one empty file per Checkpoint (its UID) that holds the archive <hex>
//	tmp/                  captures being written; emptied when the store is opened
//
// The folder is the agent's own: one store per node name (two agents sharing it would race on removals).
package archive

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Errors of an archive that is not as recorded. Both are for good: a Checkpoint whose archive is missing or
// corrupt cannot be restored.
var (
	ErrMissing = errors.New("the archive is missing from the node's checkpoint store")
	ErrCorrupt = errors.New("the archive on the node no longer matches its digest")
)

// digestPattern is a Checkpoint's status.digest; refPattern a Checkpoint's UID, which names a file.
var (
	digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	refPattern    = regexp.MustCompile(`^[a-zA-Z0-9][-a-zA-Z0-9]*$`)
)

// Archive is a stored archive: its content address and size.
type Archive struct {
	Digest string // sha256:<64 hex digits>
	Size   int64
}

// Store keeps archives content-addressed in one folder. Its methods are safe for concurrent use.
type Store struct {
	dir string
	mu  sync.Mutex // orders reference changes with the removal of unreferenced archives
}

// Open opens (creating it if needed) the store in dir and removes captures a previous agent left unfinished.
func Open(dir string) (*Store, error) {
	s := &Store{dir: dir}
	if err := os.RemoveAll(s.path("tmp")); err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	}
	for _, sub := range []string{"sha256", "refs", "tmp"} {
		if err := os.MkdirAll(s.path(sub), 0o700); err != nil {
			return nil, fmt.Errorf("checkpoint store %s is not writable: %w", dir, err)
		}
	}
	return s, nil
}

// Create starts a new archive: a temporary file that Commit stores or Discard drops.
func (s *Store) Create() (*os.File, error) {
	return os.CreateTemp(s.path("tmp"), "capture-*.tar")
}

// Discard drops an archive started with Create and not committed.
func (s *Store) Discard(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// Commit hashes the archive written to f (checking on the way that it is one complete tar stream), stores
// it under its digest, and makes ref (a Checkpoint's UID) hold it, in place of whatever ref held before. f
// is closed and gone afterwards, whatever the outcome.
func (s *Store) Commit(f *os.File, ref string) (Archive, error) {
	defer s.Discard(f)
	if !refPattern.MatchString(ref) {
		return Archive{}, fmt.Errorf("reference %q is not a UID", ref)
	}
	a, err := digestTar(f)
	if err != nil {
		return Archive{}, err
	}
	if err := f.Sync(); err != nil {
		return Archive{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.releaseLocked(ref); err != nil {
		return Archive{}, err
	}
	blob := s.blob(a.Digest)
	if _, err := os.Stat(blob); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(f.Name(), blob); err != nil {
			return Archive{}, err
		}
	} else if err != nil {
		return Archive{}, err
	}
	refs := s.path("refs", hexOf(a.Digest))
	if err := os.MkdirAll(refs, 0o700); err != nil {
		return Archive{}, err
	}
	if err := os.WriteFile(filepath.Join(refs, ref), nil, 0o600); err != nil {
		return Archive{}, err
	}
	return a, nil
}

// Check is the cheap test of a recorded archive: that it is there with the recorded size. ErrMissing or
// ErrCorrupt when not.
func (s *Store) Check(a Archive) error {
	if !digestPattern.MatchString(a.Digest) {
		return ErrCorrupt
	}
	info, err := os.Stat(s.blob(a.Digest))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat(s.blob(a.Digest) + ".corrupt"); err == nil {
			return ErrCorrupt
		}
		return ErrMissing
	case err != nil:
		return err
	case info.Size() != a.Size:
		return ErrCorrupt
	}
	return nil
}

// Open verifies the recorded archive byte for byte and opens it for reading from the start. An archive
// whose bytes no longer match its digest is set aside for good (ErrCorrupt): it is never used again.
func (s *Store) Open(a Archive) (*os.File, error) {
	if err := s.Check(a); err != nil {
		return nil, err
	}
	f, err := os.Open(s.blob(a.Digest))
	if err != nil {
		return nil, err
	}
	got, err := digest(f)
	if err == nil && got != a.Digest {
		f.Close()
		s.setAside(a.Digest)
		return nil, ErrCorrupt
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Release drops ref's hold on its archive and removes the archive when no other ref holds it. A ref that
// holds nothing is not an error.
func (s *Store) Release(ref string) error {
	if !refPattern.MatchString(ref) {
		return fmt.Errorf("reference %q is not a UID", ref)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLocked(ref)
}

func (s *Store) releaseLocked(ref string) error {
	held, err := filepath.Glob(s.path("refs", "*", ref))
	if err != nil {
		return err
	}
	for _, r := range held {
		if err := os.Remove(r); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		refs := filepath.Dir(r)
		if err := os.Remove(refs); err != nil {
			continue // another ref still holds the archive (the folder is not empty)
		}
		blob := s.path("sha256", filepath.Base(refs))
		for _, p := range []string{blob, blob + ".corrupt"} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// setAside renames a corrupt archive so that Check reports it as such.
func (s *Store) setAside(digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = os.Rename(s.blob(digest), s.blob(digest)+".corrupt")
}

func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

func (s *Store) blob(digest string) string { return s.path("sha256", hexOf(digest)) }

// hexOf is the file name of a digest; callers check digests against digestPattern first.
func hexOf(digest string) string { return filepath.Base(strings.TrimPrefix(digest, "sha256:")) }

// endMarker is the size of a tar stream's end-of-archive marker: two zero blocks.
const endMarker = 2 * 512

// digestTar reads f from the start as a tar stream to its end, hashing every byte (the padding after the
// end-of-archive marker too). An archive cut short or not a tar stream is refused: archive/tar alone takes
// a stream that simply stops between entries for a complete one.
func digestTar(f *os.File) (Archive, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Archive{}, err
	}
	h := sha256.New()
	counted := &countingReader{r: io.TeeReader(f, h)}
	tr := tar.NewReader(counted)
	for {
		before := counted.n
		_, err := tr.Next()
		if errors.Is(err, io.EOF) && counted.n-before < endMarker {
			return Archive{}, errors.New("the captured archive is cut short: it has no end-of-archive marker")
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Archive{}, fmt.Errorf("the captured archive is not a complete tar stream: %w", err)
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			return Archive{}, fmt.Errorf("the captured archive is cut short: %w", err)
		}
	}
	if _, err := io.Copy(io.Discard, counted); err != nil {
		return Archive{}, err
	}
	return Archive{Digest: sum(h), Size: counted.n}, nil
}

// digest hashes f from where it stands to its end.
func digest(f io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return sum(h), nil
}

func sum(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
