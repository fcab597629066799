package fake

import (
	"context"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Security reports what a daemon with Docker's default seccomp profile lists, or one started with
// --seccomp-profile=unconfined after SetSeccomp(false).
func (f *Driver) Security(ctx context.Context) (dd.SecurityInfo, error) {
	return call(f, ctx, OpSecurity, "", func() (dd.SecurityInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.noSeccomp {
			return dd.SecurityInfo{Options: []string{"name=seccomp,profile=unconfined"}}, nil
		}
		return dd.SecurityInfo{Options: []string{"name=seccomp,profile=builtin"}}, nil
	})
}

// SetSeccomp sets whether the fake daemon applies a seccomp profile to its containers; it does from New on.
func (f *Driver) SetSeccomp(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noSeccomp = !on
}
