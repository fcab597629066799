package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/controller/sandbox"
)

// Defaults of the node's pids and CPU room (docs/agent.md, "Room on a node").
const (
	// DefaultPidsOvercommit holds the node's pids limits to what the host has, less its reserve: a fork bomb
	// in every Sandbox at once still leaves the host its own.
	DefaultPidsOvercommit = 1
	// DefaultCPUOvercommit lets CPU limits add up to 32 times the host's CPUs: a CPU limit is a ceiling that
	// the kernel shares out fairly, not a reservation, so it bounds how thinly the node is spread, not what
	// it can hold. 60 default Sandboxes at once on a 2-CPU host fit (the e2e density spec).
	DefaultCPUOvercommit = 32
	// minPidsReserve is the least of the host's pids kept back from Sandboxes for the host's own processes
	// (dockerd, the agent, every container's runc); a tenth of them is kept when that is more.
	minPidsReserve = 1024
)

// procKernel is where the host's kernel limits are read (pid_max, threads-max); the agent runs on its
// node (the DaemonSet), whose kernel its Docker daemon shares.
var procKernel = "/proc/sys/kernel"

// processRoom is the node's room for pids and CPU limits, and the most of each one container may ask for:
// pids, the host's pid limit (opts.NodePids, else the least of pid_max and threads-max) less a reserve,
// overcommitted by opts.PidsOvercommit for the node; CPU, the host's CPUs (opts.NodeCPUs, else docker info's
// NCPU), overcommitted by opts.CPUOvercommit for the node.
func processRoom(ctx context.Context, driver dd.Driver, opts Options, log logr.Logger) (allocatable, perContainer sandbox.Holding, err error) {
	pids := opts.NodePids
	if pids == 0 {
		if pids, err = hostPids(); err != nil {
			return sandbox.Holding{}, sandbox.Holding{}, err
		}
	}
	reserve := max(minPidsReserve, pids/10)
	if pids <= reserve {
		return sandbox.Holding{}, sandbox.Holding{}, fmt.Errorf("the host allows %d pids, no more than the %d kept for the host itself: give --node-pids explicitly", pids, reserve)
	}
	cpus := opts.NodeCPUs
	if cpus == 0 {
		ctx, cancel := context.WithTimeout(ctx, opts.DockerTimeout)
		defer cancel()
		if cpus, err = driver.HostCPUs(ctx); err != nil {
			return sandbox.Holding{}, sandbox.Holding{}, fmt.Errorf("asking the Docker daemon for its host's CPUs: %w", err)
		}
	}
	perContainer = sandbox.Holding{Pids: pids - reserve, MilliCPU: int64(cpus) * 1000}
	allocatable = sandbox.Holding{
		Pids:     int64(float64(perContainer.Pids) * opts.PidsOvercommit),
		MilliCPU: int64(float64(perContainer.MilliCPU) * opts.CPUOvercommit),
	}
	log.Info("Sandboxes are admitted while their pids and CPU limits fit", "hostPids", pids, "reservePids", reserve,
		"allocatablePids", allocatable.Pids, "hostCPUs", cpus, "allocatableMilliCPU", allocatable.MilliCPU)
	return allocatable, perContainer, nil
}

// hostPids is the most processes and threads the host's kernel holds: the least of pid_max and threads-max.
func hostPids() (int64, error) {
	least := int64(0)
	for _, name := range []string{"pid_max", "threads-max"} {
		raw, err := os.ReadFile(filepath.Join(procKernel, name))
		if err != nil {
			return 0, fmt.Errorf("reading the host's pid limit (give --node-pids instead): %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("the host's %s/%s holds %q, not a number of pids (give --node-pids instead)", procKernel, name, raw)
		}
		if least == 0 || n < least {
			least = n
		}
	}
	return least, nil
}

// checkProcessRoom checks the options of processRoom, and sets their defaults.
func (o *Options) checkProcessRoom() error {
	if o.NodePids < 0 || o.NodeCPUs < 0 {
		return fmt.Errorf("the node's pids and CPUs must be positive, not %d and %d", o.NodePids, o.NodeCPUs)
	}
	if o.PidsOvercommit < 0 || o.CPUOvercommit < 0 {
		return fmt.Errorf("the overcommit factors must be positive, not %g (pids) and %g (CPU)", o.PidsOvercommit, o.CPUOvercommit)
	}
	setDefault(&o.PidsOvercommit, DefaultPidsOvercommit)
	setDefault(&o.CPUOvercommit, DefaultCPUOvercommit)
	return nil
}
