package dockerdriver

import "sync"

// keyLock serializes ensures of one name inside this process. Docker 20.10 checks network name duplicates
// without a lock (two racing creates can make two networks of one name), and the loser of a container
// name race can briefly find the name taken but the container not yet there.
type keyLock struct {
	mu   sync.Mutex
	held map[string]*keyLockEntry
}

type keyLockEntry struct {
	mu      sync.Mutex
	waiters int
}

// lock takes the lock for key and returns its release.
func (k *keyLock) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.held == nil {
		k.held = map[string]*keyLockEntry{}
	}
	e := k.held[key]
	if e == nil {
		e = &keyLockEntry{}
		k.held[key] = e
	}
	e.waiters++
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.waiters--; e.waiters == 0 {
			delete(k.held, key)
		}
		k.mu.Unlock()
	}
}
