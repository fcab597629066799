package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// minMemoryReserve is the least memory kept back from Sandboxes for the host itself (the kernel, dockerd,
// the agent); a tenth of the host's memory is kept when that is more.
const minMemoryReserve = 1 << 30

// allocatableMemory is what the Sandboxes of the node may hold in all (see internal/controller/sandbox/footprint.go):
// configured, the operator's number; else the host's memory as the daemon reports it, less a reserve of a
// tenth of it and at least 1 GiB.
func allocatableMemory(ctx context.Context, driver dd.Driver, timeout time.Duration, configured int64, log logr.Logger) (int64, error) {
	if configured > 0 {
		log.Info("Sandboxes are admitted while their memory fits the configured allocatable memory", "allocatableMemoryBytes", configured)
		return configured, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, err := driver.HostMemory(ctx)
	if err != nil {
		return 0, fmt.Errorf("asking the Docker daemon for its host's memory: %w", err)
	}
	reserve := max(minMemoryReserve, host/10)
	if host <= reserve {
		return 0, fmt.Errorf("the Docker host has %d bytes of memory, no more than the %d kept for the host itself: give the allocatable memory explicitly", host, reserve)
	}
	log.Info("Sandboxes are admitted while their memory fits the host's memory less a reserve",
		"hostMemoryBytes", host, "reserveBytes", reserve, "allocatableMemoryBytes", host-reserve)
	return host - reserve, nil
}
