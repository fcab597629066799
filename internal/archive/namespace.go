package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// NamespaceQuotaError says that a namespace's archives on the node, with its captures under way, leave no
// room under the store's cap per namespace for a capture that may write up to Want bytes.
type NamespaceQuotaError struct {
	Namespace string
	Want      int64 // the most the capture may write
	Used      int64 // bytes of the archives the namespace's Checkpoints hold, each counted once
	Reserved  int64 // bytes reserved by the namespace's other captures under way
	Limit     int64 // the cap per namespace
}

func (e *NamespaceQuotaError) Error() string {
	return fmt.Sprintf("the Checkpoints of namespace %s hold %d bytes of archives here, its captures under way reserve %d more, and its cap is %d bytes: no room for a capture of up to %d bytes",
		e.Namespace, e.Used, e.Reserved, e.Limit, e.Want)
}

// Transient tells whether only the namespace's captures under way stand in the way: the room may come back
// when they end. Otherwise its archives kept fill its cap.
func (e *NamespaceQuotaError) Transient() bool { return e.Used < e.Limit }

// fitNamespaceLocked bounds the capture by the room its namespace has left under the cap: the archives its
// Checkpoints hold are counted from the refs on disk, so a restarted agent counts what is kept. A capture
// starts only when the namespace's other captures under way leave it all that room (else it waits for them,
// Transient): a capture cut off at the room then passed what the archives kept leave, which stays true until
// Checkpoints of the namespace are deleted.
func (s *Store) fitNamespaceLocked(c *Capture) error {
	used, err := s.namespaceBytesLocked(c.namespace)
	if err != nil {
		return err
	}
	room, reserved := s.limits.Namespace-used, s.nsReserved[c.namespace]
	q := &NamespaceQuotaError{Namespace: c.namespace, Want: c.most, Used: used, Reserved: reserved, Limit: s.limits.Namespace}
	if room <= 0 || reserved+min(c.most, room) > room {
		return q
	}
	if room < c.most {
		c.most, c.quota = room, q
	}
	return nil
}

// namespaceBytesLocked adds up the archives that Checkpoints of namespace hold, each once however many of
// them hold it (an archive another namespace holds too counts in both: either keeps it on disk alone).
func (s *Store) namespaceBytesLocked(namespace string) (int64, error) {
	refs, err := filepath.Glob(s.path("refs", "*", "*"))
	if err != nil {
		return 0, fmt.Errorf("listing the archives' references: %w", err)
	}
	counted := map[string]bool{}
	var total int64
	for _, ref := range refs {
		hex := filepath.Base(filepath.Dir(ref))
		if counted[hex] {
			continue
		}
		owner, err := os.ReadFile(ref)
		if err != nil {
			return 0, fmt.Errorf("reading the owner of %s: %w", ref, err)
		}
		if string(owner) != namespace {
			continue
		}
		counted[hex] = true
		size, err := s.archiveBytesLocked(hex)
		if err != nil {
			return 0, err
		}
		total += size
	}
	return total, nil
}

// archiveBytesLocked is the size of the archive named hex on disk, set aside as corrupt or not (either holds
// the disk until released), or 0 when it is gone.
func (s *Store) archiveBytesLocked(hex string) (int64, error) {
	blob := s.path("sha256", hex)
	for _, p := range []string{blob, blob + ".corrupt"} {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("checkpoint store: %w", err)
		}
		return info.Size(), nil
	}
	return 0, nil
}
