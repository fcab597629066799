package fake

import (
	"context"
	"slices"
)

// Runtimes reports the OCI runtimes the fake daemon offers: runc alone from New on, or what SetRuntimes set.
func (f *Driver) Runtimes(ctx context.Context) ([]string, error) {
	return call(f, ctx, OpRuntimes, "", func() ([]string, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return slices.Clone(f.runtimes), nil
	})
}

// SetRuntimes sets the OCI runtimes the fake daemon offers (as dockerd --add-runtime would add runsc); a
// container asking for another is refused at creation, as with Docker.
func (f *Driver) SetRuntimes(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runtimes = slices.Sorted(slices.Values(names))
}
