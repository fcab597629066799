package sandbox

import (
	"context"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// ensureWorkspace keeps the workspace volume held by a running holder container, first of all: a tmpfs
// volume loses its files as soon as no running container mounts it (docs/architecture.md, "Why the holder exists"), and the holder outlives
// every topology generation.
func (r *SandboxReconciler) ensureWorkspace(ctx context.Context, s *scope) (bool, error) {
	holder := s.containers[s.holderName()]
	if alive(holder) {
		return false, nil
	}
	if !holder.Exists {
		_, err := r.Driver.EnsureVolume(ctx, dd.VolumeSpec{
			Name: s.volumeName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleWorkspace, SizeBytes: workspaceBytes(s.sbx.Spec.Workspace),
		})
		if err != nil {
			return s.fail(dsv1alpha1.ReasonWorkspaceFailed, "creating the workspace volume", err)
		}
		if holder, err = r.Driver.EnsureContainer(ctx, r.holderSpec(s)); err != nil {
			return s.fail(dsv1alpha1.ReasonWorkspaceFailed, "creating the workspace holder", err)
		}
	}
	if err := r.Driver.StartContainer(ctx, holder.Name); err != nil {
		return s.fail(dsv1alpha1.ReasonWorkspaceFailed, "starting the workspace holder", err)
	}
	if holder.StartedAt.IsZero() {
		r.event(s.sbx, false, EventWorkspaceCreated, "Create", "workspace volume of %s created and held", s.sbx.Spec.Workspace.Size.String())
	} else {
		r.event(s.sbx, true, EventHolderRestarted, "Start", "the workspace holder had stopped and was started again; files not held by a running container were lost")
	}
	return false, nil
}
