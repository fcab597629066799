package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// checkSeccomp asks the daemon whether it filters the system calls of containers, once, before the agent
// runs anything. Dockside names no seccomp profile of its own, so the daemon's default is what every
// sandbox gets; a daemon without one (or with --seccomp-profile=unconfined) leaves untrusted code every
// system call of the host's kernel, which dropped capabilities and no-new-privileges do not make up for.
// Such a daemon is refused unless allowNone accepts the risk; either way the log says what holds.
func checkSeccomp(ctx context.Context, driver dd.Driver, timeout time.Duration, allowNone bool, log logr.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := driver.Security(ctx)
	if err != nil {
		return fmt.Errorf("asking the Docker daemon whether it applies a seccomp profile: %w", err)
	}
	profile, on := info.Seccomp()
	switch {
	case on:
		log.Info("Docker applies a seccomp profile to every sandbox", "profile", profile)
		return nil
	case allowNone:
		log.Error(nil, "DANGER: Docker applies NO seccomp profile: sandboxes can make every system call of the host's kernel; running anyway because --allow-no-seccomp accepts the risk",
			"securityOptions", info.Options)
		return nil
	}
	return fmt.Errorf("the Docker daemon applies no seccomp profile (docker info lists security options %q), so sandboxes could make every system call of the host's kernel; run dockerd with its default seccomp profile, or start the agent with --allow-no-seccomp to accept the risk", info.Options)
}
