package fake

import (
	"context"
)

// DefaultHostMemory is the memory the fake daemon's host has until SetHostMemory says otherwise: large, so
// that the memory of the Sandboxes a test starts never decides admission unless the test means it to.
const DefaultHostMemory = 64 << 30

// DefaultHostCPUs is the fake host's number of CPUs until SetHostCPUs says otherwise: as many as a container
// may ask for, so that CPU decides admission only where a test means it to.
const DefaultHostCPUs = 64

// HostMemory reports the memory of the fake daemon's host (docker info's MemTotal).
func (f *Driver) HostMemory(ctx context.Context) (int64, error) {
	return call(f, ctx, OpHostMemory, "", func() (int64, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.hostMemory, nil
	})
}

// SetHostMemory sets the memory, in bytes, that the fake daemon reports for its host.
func (f *Driver) SetHostMemory(bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hostMemory = bytes
}

// HostCPUs reports the number of CPUs of the fake daemon's host (docker info's NCPU).
func (f *Driver) HostCPUs(ctx context.Context) (int, error) {
	return call(f, ctx, OpHostCPUs, "", func() (int, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.hostCPUs, nil
	})
}

// SetHostCPUs sets the number of CPUs that the fake daemon reports for its host.
func (f *Driver) SetHostCPUs(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hostCPUs = n
}
