package sandboxclaim

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// inFlight is what this agent's passes are binding, or bound while its cache does not show it yet. Only a
// node's agent binds that node's warm Sandboxes, so what its passes know of each other is all there is to
// know: a pass skips a Sandbox another pass took at the resourceVersion it sees, rather than patch it and
// meet a conflict (a request, then a try of the next, each one more behind a stale cache: 20 claims at once
// paid dozens), and a claim bound by a pass is not bound again by its next pass, run before the cache caught
// up with the first (which would take a second Sandbox from the pool, and then delete it). Nor does that
// next pass write the claim's status again when the first pass's write stood: from the cache's older copy
// the write could only conflict. The API server's optimistic lock still decides every binding; this only
// keeps passes from racing where they need not.
type inFlight struct {
	mu        sync.Mutex
	sandboxes map[types.UID]taken
	claims    map[types.NamespacedName]boundAt // claims a pass bound, until a pass sees the binding in the cache
}

// boundAt is a claim a pass bound, and when; recorded once a pass's status write naming its Sandbox stood.
type boundAt struct {
	uid      types.UID
	at       time.Time
	recorded bool
}

// cacheLag bounds how long a binding may go unseen by the cache before the claim is bound afresh: far more
// than the cache ever lags, so reached only when the binding was undone before the cache saw it (the
// claim's status write lost and its Sandbox deleted).
const cacheLag = 30 * time.Second

// taken is a Sandbox a pass took: at which resourceVersion, for which pool.
type taken struct {
	version string
	pool    types.NamespacedName
}

func newInFlight() *inFlight {
	return &inFlight{sandboxes: map[types.UID]taken{}, claims: map[types.NamespacedName]boundAt{}}
}

// take reserves sbx of pool for a pass, unless another pass took it at the resourceVersion the caller sees.
// One taken at an older resourceVersion is the cache's past: it changed since (or the API server refused
// that pass), and whoever holds it now is decided by the API server.
func (f *inFlight) take(sbx *dsv1alpha1.Sandbox, pool types.NamespacedName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.sandboxes[sbx.UID]; ok && t.version == sbx.ResourceVersion {
		return false
	}
	f.sandboxes[sbx.UID] = taken{version: sbx.ResourceVersion, pool: pool}
	return true
}

// untake gives back what take reserved, when the binding failed; a later take at another version stays.
func (f *inFlight) untake(sbx *dsv1alpha1.Sandbox, version string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.sandboxes[sbx.UID]; ok && t.version == version {
		delete(f.sandboxes, sbx.UID)
	}
}

// prune forgets the pool's Sandboxes that the cache shows changed since they were taken, or no more: listed
// is every Sandbox of the pool in the cache, by UID with its resourceVersion.
func (f *inFlight) prune(pool types.NamespacedName, listed map[types.UID]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid, t := range f.sandboxes {
		if t.pool == pool && listed[uid] != t.version {
			delete(f.sandboxes, uid)
		}
	}
}

// bound records that a pass bound the claim.
func (f *inFlight) bound(claim *dsv1alpha1.SandboxClaim) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims[types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}] = boundAt{uid: claim.UID, at: time.Now()}
}

// recorded records that a pass's status write naming the claim's Sandbox stood: the API server holds the
// binding whole, warm or cold, and only the cache's copy of the claim may lack it.
func (f *inFlight) recorded(claim *dsv1alpha1.SandboxClaim) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claims[types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}] = boundAt{uid: claim.UID, at: time.Now(), recorded: true}
}

// unseen tells whether a pass bound the claim and the cache does not show it yet.
func (f *inFlight) unseen(claim *dsv1alpha1.SandboxClaim) bool {
	_, ok := f.find(claim)
	return ok
}

// statusUnseen tells whether a pass's status write naming the claim's Sandbox stood and the cache does not
// show it yet.
func (f *inFlight) statusUnseen(claim *dsv1alpha1.SandboxClaim) bool {
	b, ok := f.find(claim)
	return ok && b.recorded
}

// find is what a pass recorded of the claim, unless that is older than the cache ever lags.
func (f *inFlight) find(claim *dsv1alpha1.SandboxClaim) (boundAt, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.claims[types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}]
	return b, ok && b.uid == claim.UID && time.Since(b.at) < cacheLag
}

// seen forgets the claim: the cache shows its binding, or it is gone.
func (f *inFlight) seen(claim types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.claims, claim)
}
