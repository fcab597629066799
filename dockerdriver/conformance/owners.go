package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// cleanupTimeout bounds the removal of what one behaviour made; it runs after the test's own context ended.
const cleanupTimeout = time.Minute

// newOwner is a fresh owner for one behaviour. Everything it gets is removed through the driver when t
// ends, containers first, as the controllers do: a network or volume in use cannot go.
func newOwner(t T, h Harness) dd.Owner {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("random owner UID: %v", err)
	}
	o := dd.Owner{Namespace: "conformance", Name: "owner", UID: hex.EncodeToString(b), Generation: 1}
	t.Cleanup(func() { removeOwned(t, h.Driver, o) })
	return o
}

func removeOwned(t T, d dd.Driver, o dd.Owner) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	for _, k := range Objects {
		objects, err := ops[k].list(ctx, d, o)
		if err != nil {
			t.Errorf("listing the owner's %ss to remove them: %v", k, err)
		}
		for _, obj := range objects {
			if err := ops[k].remove(ctx, d, obj.name); err != nil {
				t.Errorf("removing %s %s: %v", k, obj.name, err)
			}
		}
	}
}
