// Package archive is the node's store of Checkpoint archives: tar files kept content-addressed (sha256) in a
// folder of the agent's, with a reference per Checkpoint so that an archive two Checkpoints share is removed
// only with the last of them.
//
// Layout under the store's folder:
//
//	sha256/<hex>          an archive, named by the sha256 of its bytes
//	sha256/<hex>.corrupt  an archive whose bytes no longer match its name, kept aside so that it is never used
//	refs/<hex>/<ref>      one file per Checkpoint (its UID) that holds the archive <hex>; it holds the
//	                      Checkpoint's namespace (empty in stores written before namespaces were counted)
//	tmp/                  captures being written; emptied when the store is opened
//
// The folder is the agent's own: one store per node name (two agents sharing it would race on removals).
//
// The store has a limit in bytes. A capture reserves, before it writes anything, the most it may write; the
// archives kept plus the reservations of captures under way never pass the limit, so a node's disk is never
// filled by Checkpoints, whatever the captures hold. It may also cap the bytes of each namespace: the archives
// its Checkpoints hold (each once) plus its captures under way never pass that cap (namespace.go).
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
	dir        string
	limits     Limits
	mu         sync.Mutex       // orders reference changes with the removal of unreferenced archives; guards the sizes
	stored     int64            // bytes of the files in sha256/ (corrupt ones set aside too: they hold the disk)
	reserved   int64            // bytes reserved by captures under way
	nsReserved map[string]int64 // bytes reserved by captures under way, by namespace
}

// Limits are a store's limits in bytes.
type Limits struct {
	Store     int64 // most bytes of archives kept and reserved; required
	Namespace int64 // most bytes of the archives one namespace's Checkpoints hold, and its reservations; 0: no cap
}

// FullError says that the store has no room for a capture that may write up to Want bytes.
type FullError struct {
	Want     int64 // the most the capture may write
	Stored   int64 // bytes of the archives kept
	Reserved int64 // bytes reserved by other captures under way
	Limit    int64 // the store's limit
}

func (e *FullError) Error() string {
	return fmt.Sprintf("the checkpoint store holds %d bytes of archives, captures under way reserve %d more, and its limit is %d bytes: no room for a capture of up to %d bytes",
		e.Stored, e.Reserved, e.Limit, e.Want)
}

// Transient tells whether only captures under way stand in the way: the room may come back when they end.
func (e *FullError) Transient() bool { return e.Stored+e.Want <= e.Limit }

// Capture is an archive being written for a Checkpoint of namespace: a temporary file, with room for up to
// most bytes reserved in the store until Commit or Discard.
type Capture struct {
	*os.File
	most      int64
	namespace string
	quota     *NamespaceQuotaError // set when the namespace's cap, not what was asked, bounds the capture
}

// Most is the most bytes the capture may write: what Create was asked for, or less when that is all the
// namespace's cap leaves (then Quota says so).
func (c *Capture) Most() int64 { return c.most }

// Quota is, for a capture that its namespace's cap bounds below what was asked, the namespace's use when it
// began: writing past Most would take the namespace past its cap. Nil for any other capture.
func (c *Capture) Quota() *NamespaceQuotaError { return c.quota }

// Open opens (creating it if needed) the store in dir with its limits, removes captures a previous agent left
// unfinished and counts the archives kept.
func Open(dir string, limits Limits) (*Store, error) {
	if limits.Store <= 0 {
		return nil, fmt.Errorf("checkpoint store %s: the limit must be a positive number of bytes, not %d", dir, limits.Store)
	}
	if limits.Namespace < 0 {
		return nil, fmt.Errorf("checkpoint store %s: the cap per namespace must be a positive number of bytes, or 0 for none, not %d", dir, limits.Namespace)
	}
	s := &Store{dir: dir, limits: limits, nsReserved: map[string]int64{}}
	if err := os.RemoveAll(s.path("tmp")); err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	}
	for _, sub := range []string{"sha256", "refs", "tmp"} {
		if err := os.MkdirAll(s.path(sub), 0o700); err != nil {
			return nil, fmt.Errorf("checkpoint store %s is not writable: %w", dir, err)
		}
	}
	stored, err := sizeOf(s.path("sha256"))
	if err != nil {
		return nil, fmt.Errorf("checkpoint store %s: %w", dir, err)
	}
	s.stored = stored
	return s, nil
}

// Create starts a new archive of a Checkpoint of namespace that may take up to most bytes: a temporary file
// that Commit stores or Discard drops. It reserves the room first: less than most when that is all the
// namespace's cap leaves (Capture.Quota), or it fails with a *NamespaceQuotaError when the namespace has no
// room, and with a *FullError when the archives kept and the reservations of other captures leave less than
// the capture's bound under the store's limit.
func (s *Store) Create(most int64, namespace string) (*Capture, error) {
	c := &Capture{most: most, namespace: namespace}
	if err := s.reserve(c); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.path("tmp"), "capture-*.tar")
	if err != nil {
		s.unreserve(c)
		return nil, fmt.Errorf("starting an archive in the checkpoint store: %w", err)
	}
	c.File = f
	return c, nil
}

// Discard drops an archive started with Create and not committed, and gives its room back. Discarding
// twice is harmless.
func (s *Store) Discard(c *Capture) {
	c.Close()
	os.Remove(c.Name())
	s.unreserve(c)
	c.most = 0
}

// Commit hashes the archive written to c (checking on the way that it is one complete tar stream no larger
// than its reservation), stores it under its digest, and makes ref (a Checkpoint's UID) hold it, in place
// of whatever ref held before. c is closed and gone afterwards, and its room given back, whatever the
// outcome.
func (s *Store) Commit(c *Capture, ref string) (Archive, error) {
	defer s.Discard(c)
	if !refPattern.MatchString(ref) {
		return Archive{}, fmt.Errorf("reference %q is not a UID", ref)
	}
	a, err := digestTar(c.File)
	if err != nil {
		return Archive{}, err
	}
	if a.Size > c.most {
		return Archive{}, fmt.Errorf("the captured archive has %d bytes, more than the %d reserved for it", a.Size, c.most)
	}
	if err := c.Sync(); err != nil {
		return Archive{}, fmt.Errorf("writing the archive to disk: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.releaseLocked(ref); err != nil {
		return Archive{}, err
	}
	blob := s.blob(a.Digest)
	if _, err := os.Stat(blob); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(c.Name(), blob); err != nil {
			return Archive{}, fmt.Errorf("storing the archive %s: %w", a.Digest, err)
		}
		s.stored += a.Size
	} else if err != nil {
		return Archive{}, fmt.Errorf("checkpoint store: %w", err)
	}
	refs := s.path("refs", hexOf(a.Digest))
	if err := os.MkdirAll(refs, 0o700); err != nil {
		return Archive{}, fmt.Errorf("checkpoint store: %w", err)
	}
	if err := os.WriteFile(filepath.Join(refs, ref), []byte(c.namespace), 0o600); err != nil {
		return Archive{}, fmt.Errorf("recording the archive's reference: %w", err)
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
		return fmt.Errorf("checkpoint store: %w", err)
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
		return nil, fmt.Errorf("opening the archive %s: %w", a.Digest, err)
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
		return nil, fmt.Errorf("reading the archive %s: %w", a.Digest, err)
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
		return fmt.Errorf("listing the archive references of %s: %w", ref, err)
	}
	for _, r := range held {
		if err := os.Remove(r); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("releasing the archive reference: %w", err)
		}
		refs := filepath.Dir(r)
		if err := os.Remove(refs); err != nil {
			continue // another ref still holds the archive (the folder is not empty)
		}
		blob := s.path("sha256", filepath.Base(refs))
		for _, p := range []string{blob, blob + ".corrupt"} {
			if err := s.removeLocked(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// removeLocked removes an archive file, if there, and takes its bytes off the store's total.
func (s *Store) removeLocked(p string) error {
	info, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the archive: %w", err)
	}
	s.stored -= info.Size()
	return nil
}

// reserve sets aside room for the capture, first bounding it by its namespace's cap, or says why there is none.
func (s *Store) reserve(c *Capture) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limits.Namespace > 0 {
		if err := s.fitNamespaceLocked(c); err != nil {
			return err
		}
	}
	if s.stored+s.reserved+c.most > s.limits.Store {
		return &FullError{Want: c.most, Stored: s.stored, Reserved: s.reserved, Limit: s.limits.Store}
	}
	s.reserved += c.most
	s.nsReserved[c.namespace] += c.most
	return nil
}

func (s *Store) unreserve(c *Capture) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved -= c.most
	if s.nsReserved[c.namespace] -= c.most; s.nsReserved[c.namespace] == 0 {
		delete(s.nsReserved, c.namespace)
	}
}

// sizeOf adds up the sizes of the files in dir.
func sizeOf(dir string) (int64, error) {
	list, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("sizing the checkpoint store: %w", err)
	}
	var total int64
	for _, e := range list {
		info, err := e.Info()
		if err != nil {
			return 0, fmt.Errorf("sizing the checkpoint store: %w", err)
		}
		if info.Mode().IsRegular() {
			total += info.Size()
		}
	}
	return total, nil
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
		return Archive{}, fmt.Errorf("reading the captured archive: %w", err)
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
		return Archive{}, fmt.Errorf("reading the captured archive: %w", err)
	}
	return Archive{Digest: sum(h), Size: counted.n}, nil
}

// digest hashes f from where it stands to its end.
func digest(f io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing the archive: %w", err)
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
	return n, err //nolint:wrapcheck // an io.Reader returns io.EOF as it is: readers compare it with ==
}
