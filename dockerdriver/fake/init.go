package fake

import (
	"context"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Init reports what a daemon with Docker's own docker-init reports, or one that could not run its init
// binary after SetInit(false).
func (f *Driver) Init(ctx context.Context) (dd.InitInfo, error) {
	return call(f, ctx, OpInit, "", func() (dd.InitInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.noInit {
			return dd.InitInfo{Binary: "docker-init", Commit: "N/A"}, nil
		}
		return dd.InitInfo{Binary: "docker-init"}, nil
	})
}

// SetInit sets whether the fake daemon has an init binary; it does from New on. Without one, a container
// asking for it fails to start, as with Docker.
func (f *Driver) SetInit(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noInit = !on
}
