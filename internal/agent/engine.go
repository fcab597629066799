package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// engineCheck logs the Docker engine's version at start and warns when it is one that forwards DNS queries
// from internal networks through the host's resolver when that is on loopback (CVE-2024-29018: every Docker
// before 23.0.11, and 24.x and 25.x before 25.0.4). The Docker driver gives the containers of internal
// networks a resolver that leads nowhere (docs/egress.md, "DNS"), so the warning says what the agent covers
// and what it cannot: containers made by an agent before that.
func engineCheck(ctx context.Context, driver dd.Driver, timeout time.Duration, log logr.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := driver.Ping(ctx)
	if err != nil {
		return fmt.Errorf("asking the Docker daemon for its version: %w", err)
	}
	if dnsLeaks(v.Server) {
		// A warning, not an error: the agent covers the condition, and an error's stack trace would bury that.
		log.Info("Warning: this Docker engine forwards DNS queries from internal networks through the host's resolver when that is on loopback (CVE-2024-29018, fixed in 23.0.11 and 25.0.4): "+
			"Dockside gives None and Isolated containers a resolver that leads nowhere, but upgrade Docker",
			"engineVersion", v.Server, "apiVersion", v.APIVersion)
		return nil
	}
	log.Info("Docker engine", "engineVersion", v.Server, "apiVersion", v.APIVersion)
	return nil
}

// dnsLeaks tells whether a Docker engine version (20.10.24+dfsg1, 25.0.3, 26.1.0...) is one CVE-2024-29018
// affects; a version it cannot read is taken as affected.
func dnsLeaks(version string) bool {
	core, _, _ := strings.Cut(version, "-")
	core, _, _ = strings.Cut(core, "+")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return true
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil {
			return true
		}
		n[i] = x
	}
	major, minor, patch := n[0], n[1], n[2]
	switch major {
	case 23:
		return minor == 0 && patch < 11
	case 24:
		return true
	case 25:
		return minor == 0 && patch < 4
	}
	return major < 23
}
