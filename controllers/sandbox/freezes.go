package sandbox

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Freezes records the Sandboxes a capture is holding frozen. The Sandbox reconciler leaves their lifecycle
// alone meanwhile: it would otherwise thaw a primary it finds paused against spec.lifecycle: Running, in the
// middle of the copy. A nil *Freezes holds nothing.
type Freezes struct {
	mu   sync.Mutex
	held map[types.UID]bool
}

// Hold marks the Sandbox as held by a capture; false when another capture holds it already.
func (f *Freezes) Hold(uid types.UID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[uid] {
		return false
	}
	if f.held == nil {
		f.held = map[types.UID]bool{}
	}
	f.held[uid] = true
	return true
}

// Release ends a capture's hold.
func (f *Freezes) Release(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.held, uid)
}

// Held tells whether a capture holds the Sandbox now.
func (f *Freezes) Held(uid types.UID) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[uid]
}
