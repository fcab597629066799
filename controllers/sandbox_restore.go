package controllers

import (
	"context"

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// ensureRestored is where a Sandbox with restoreFrom gets its Checkpoint's files: copied into the workspace
// through the holder, after the workspace exists and before any service or the primary starts. This agent
// cannot restore yet (the Checkpoint issue adds it), so such a Sandbox waits, saying why, and nothing of
// its topology starts.
func (r *SandboxReconciler) ensureRestored(ctx context.Context, s *scope) (bool, error) {
	if s.sbx.Spec.RestoreFrom == "" {
		return false, nil
	}
	s.waiting(v1.SandboxPending, v1.ReasonRestoreNotSupported,
		"restoring from Checkpoint %q is not supported by this agent yet", s.sbx.Spec.RestoreFrom)
	return true, nil
}
