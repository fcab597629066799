package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// nodeStorage asks the daemon for its storage driver, once, before the agent runs anything: it decides
// whether Sandboxes may have a writable root file system here (it must be capped on the node's disk), and
// the log says which way it went.
func nodeStorage(ctx context.Context, driver dd.Driver, timeout time.Duration, log logr.Logger) (dd.StorageInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	storage, err := driver.Storage(ctx)
	if err != nil {
		return dd.StorageInfo{}, fmt.Errorf("asking the Docker daemon for its storage driver: %w", err)
	}
	if can, why := storage.CapsWritableLayer(); can {
		log.Info("Sandboxes may have a writable root file system, capped by the storage driver", "storageDriver", storage.Driver, "backingFilesystem", storage.BackingFS)
	} else {
		log.Info("Sandboxes asking for a writable root file system will fail with WritableRootUnsupported", "why", why)
	}
	return storage, nil
}
