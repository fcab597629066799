package agent

import "path/filepath"

// pullRecordsPath is where the node's image pull records are kept (imagepuller.Records, docs/design/containment.md
// "Pull credentials stay in their namespace"): beside the host lock in the checkpoint folder, so that they
// outlive the agent. Without a checkpoint folder they are kept in memory, for the life of the agent only.
func pullRecordsPath(opts Options) string {
	if opts.CheckpointDir == "" {
		return ""
	}
	return filepath.Join(opts.CheckpointDir, "."+opts.Node+".image-pulls.json")
}
