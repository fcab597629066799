package dataplane

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// allowedFor is how long an allowed SubjectAccessReview is believed again for the same caller and request
// without asking. The kubelet's webhook authorizer keeps an allowed decision 5 minutes; ours is short, so that
// a RoleBinding taken away stops new calls within seconds. Refusals are never kept.
const allowedFor = 10 * time.Second

// authCache remembers allowed decisions, so that a client running many short commands costs one
// SubjectAccessReview per allowedFor rather than one per command.
type authCache struct {
	mu      sync.Mutex
	allowed map[string]time.Time // key -> when the decision expires
}

func newAuthCache() *authCache { return &authCache{allowed: map[string]time.Time{}} }

// authorize is authorize through the cache, after peerDenied through the cache for a caller a peer passed on.
func (a *authCache) authorize(ctx context.Context, c client.Client, caller Caller, verb, ns, name, sub string) (string, error) {
	if caller.ForwardedBy != "" {
		denied, err := a.decide(cacheKey(caller, "", "", "", "")+"\x00peer "+caller.ForwardedBy,
			func() (string, error) { return peerDenied(ctx, c, caller) })
		if err != nil || denied != "" {
			return denied, err
		}
	}
	return a.decide(cacheKey(caller, verb, ns, name, sub), func() (string, error) { return authorize(ctx, c, caller, verb, ns, name, sub) })
}

// administrator is administrator through the cache, which keeps only "not one" (an allowed answer).
func (a *authCache) administrator(ctx context.Context, c client.Client, caller Caller) (string, error) {
	return a.decide(cacheKey(caller, "", "", "", "")+"\x00admin", func() (string, error) { return administrator(ctx, c, caller) })
}

// decide is ask's decision, or the one kept under key while it is allowedFor old.
func (a *authCache) decide(key string, ask func() (string, error)) (string, error) {
	now := time.Now()
	a.mu.Lock()
	expires, ok := a.allowed[key]
	a.mu.Unlock()
	if ok && now.Before(expires) {
		return "", nil
	}
	denied, err := ask()
	if err != nil || denied != "" {
		return denied, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, exp := range a.allowed { // few entries: one per caller and Sandbox in the last allowedFor
		if now.After(exp) {
			delete(a.allowed, k)
		}
	}
	a.allowed[key] = now.Add(allowedFor)
	return "", nil
}

// cacheKey is every part of the request a decision depends on, unambiguously joined.
func cacheKey(caller Caller, verb, ns, name, sub string) string {
	parts := []string{caller.Name, caller.UID, verb, ns, name, sub, strings.Join(caller.Groups, "\x01")}
	keys := make([]string, 0, len(caller.Extra))
	for k := range caller.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k+"\x02"+strings.Join(caller.Extra[k], "\x01"))
	}
	return strings.Join(parts, "\x00")
}
