package fake

import (
	"context"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Storage reports the storage driver the fake daemon has: overlay2 on extfs, which cannot cap a
// container's writable layer, until SetStorage says otherwise.
func (f *Driver) Storage(ctx context.Context) (dd.StorageInfo, error) {
	return call(f, ctx, OpStorage, "", func() (dd.StorageInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.storage, nil
	})
}

// SetStorage sets the storage driver and backing file system the fake daemon has, which decide whether a
// container may have a writable root file system (see dockerdriver.StorageInfo).
func (f *Driver) SetStorage(s dd.StorageInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.storage = s
}
