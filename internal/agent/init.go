package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// nodeInit asks the daemon for its init binary, once, before the agent runs anything: with one, every
// primary runs under it, so that the orphans of the processes the data plane kills are reaped instead of
// holding the Sandbox's pids as zombies (docs/design/decisions/0027-primaries-run-under-an-init.md).
// Without one the agent runs on, and the log says what that costs.
func nodeInit(ctx context.Context, driver dd.Driver, timeout time.Duration, log logr.Logger) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := driver.Init(ctx)
	if err != nil {
		return false, fmt.Errorf("asking the Docker daemon for its init binary: %w", err)
	}
	if ok, why := info.Available(); !ok {
		log.Info("Warning: Sandboxes' primaries run without an init: the orphans of killed processes stay as zombies, each holding one of the Sandbox's pids until it stops", "why", why)
		return false, nil
	}
	log.Info("Sandboxes' primaries run under the Docker daemon's init, which reaps orphans", "initBinary", info.Binary)
	return true, nil
}
