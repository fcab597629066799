package sandbox

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// ensureWorkspace keeps the workspace volume held by a running holder container: a tmpfs volume loses its
// files as soon as no running container mounts it (docs/design/docker-mapping.md, "Why the holder exists"), and the
// holder outlives every topology generation. The volume is made first of all; the holder only when
// something needs the workspace without the primary (holderFirst), else after the primary started, off the
// Sandbox's way to Ready, once the node's other starts are over (holderWaits).
func (r *Reconciler) ensureWorkspace(ctx context.Context, s *scope) (bool, error) {
	holder := s.containers[s.holderName()]
	if topology.Alive(holder) {
		return false, nil
	}
	if !holder.Exists {
		_, err := r.Driver.EnsureVolume(ctx, dd.VolumeSpec{
			Name: s.volumeName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleWorkspace, SizeBytes: topology.WorkspaceBytes(s.sbx.Spec.Workspace),
		})
		if err != nil {
			return s.fail(dsv1alpha1.ReasonWorkspaceFailed, "creating the workspace volume", err)
		}
		if !holderFirst(s) || r.holderWaits(ctx, s) {
			return false, nil // made by a later pass (ensurePrimary asks for the first)
		}
	}
	return r.startHolder(ctx, s, holder)
}

// startHolder makes the workspace holder if it does not exist and starts it.
func (r *Reconciler) startHolder(ctx context.Context, s *scope, holder dd.ContainerInfo) (bool, error) {
	if !holder.Exists {
		var err error
		if holder, err = r.Driver.EnsureContainer(ctx, r.holderSpec(s)); err != nil {
			return s.fail(dsv1alpha1.ReasonWorkspaceFailed, "creating the workspace holder", err)
		}
	}
	if err := r.Driver.StartContainer(ctx, holder.Name); err != nil {
		if holder.StartedAt.IsZero() && dd.IsUncertain(err) {
			r.discardHolder(ctx, holder.Name)
		}
		return s.fail(dsv1alpha1.ReasonWorkspaceFailed, "starting the workspace holder", err)
	}
	if holder.StartedAt.IsZero() {
		r.event(s.sbx, false, EventWorkspaceCreated, "Create", "workspace volume of %s created and held", s.sbx.Spec.Workspace.Size.String())
	} else {
		r.event(s.sbx, true, EventHolderRestarted, "Start", "the workspace holder had stopped and was started again; files not held by a running container were lost")
	}
	return false, nil
}

// holdBeforeRoll starts the holder of a workspace whose holder waited (holderWaits) before a roll removes the
// primary that holds it.
func (r *Reconciler) holdBeforeRoll(ctx context.Context, s *scope) (bool, error) {
	holder := s.containers[s.holderName()]
	if topology.Alive(holder) || !primaryMade(s) {
		return false, nil
	}
	return r.startHolder(ctx, s, holder)
}

// holderFirst tells whether the holder must run before the primary is made. A new session's primary holds
// the workspace itself from its start, so its holder may come a pass later; until then nothing is in the
// workspace that the primary did not write. Everything else needs the holder first: a restore copies files
// in through it, a run's command may end (and take the volume's files with it) before a later pass, and once
// a primary exists (of any generation) the holder is what keeps the workspace across its stops and rolls.
func holderFirst(s *scope) bool {
	return s.isRun() || s.sbx.Spec.RestoreFrom != "" || primaryMade(s)
}

// discardHolder removes a holder that never ran and whose start had an unknown outcome, so that the next pass
// makes a new one. A Docker daemon killed while it started a container can leave it unstartable for good (its
// runtime still holds the ID), and a holder that never ran holds nothing: the workspace's files, if any, are
// held by the primary, and nothing is copied in through a holder before it runs. A failed removal is left to
// the next pass, which tries the start again.
func (r *Reconciler) discardHolder(ctx context.Context, name string) {
	if err := r.Driver.RemoveContainer(ctx, name); err != nil {
		ctrl.LoggerFrom(ctx).Info("Could not remove a workspace holder whose start failed", "holder", name, "error", err.Error())
	}
}
