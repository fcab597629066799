package agent

import (
	"context"
	"path/filepath"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/imagegc"
	"github.com/dockside-dev/dockside/internal/imagepuller"
)

// pullRecordsPath is where the node's image pull records are kept (imagepuller.Records, docs/design/containment.md
// "Pull credentials stay in their namespace"): beside the host lock in the checkpoint folder, so that they
// outlive the agent. Without a checkpoint folder they are kept in memory, for the life of the agent only.
func pullRecordsPath(opts Options) string {
	if opts.CheckpointDir == "" {
		return ""
	}
	return filepath.Join(opts.CheckpointDir, "."+opts.Node+".image-pulls.json")
}

// pullerOf is the node's image puller, capping one image at --max-image-size and watching, while it pulls,
// the file system of Docker's data root that image garbage collection watches (docs/images.md, "How large an
// image may be"): a pull that unpacks more than the cap is stopped there, not after.
func pullerOf(ctx context.Context, driver dd.Driver, records *imagepuller.Records, opts Options, wake *handoff.Wakeups) *imagepuller.Puller {
	p := imagepuller.New(ctx, driver, records, opts.MaxImageBytes, wake.Now)
	if opts.ImageGC.Filesystem != "" {
		p.WatchDisk(imagepuller.Usage(imagegc.Statfs(opts.ImageGC.Filesystem)))
	}
	return p
}
