package sandbox

import (
	"context"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// runVolumeBytes is the size of a session's run volume: the supervisor its Executions run under (about
// 1.5 MiB) and the output it keeps of one command (at most 256 KiB of each stream), with room to spare
// (docs/design/decisions/0028-commands-run-under-a-supervisor.md). It counts in the node's room like any
// tmpfs.
const runVolumeBytes = 4 << 20

// runVolumeName names a session's run volume; like the workspace it lives as long as the Sandbox, and goes
// with it (removeOwned finds it by its labels).
func (s *scope) runVolumeName() string {
	return dd.Name(s.names().WorkspaceOwner(), dsv1alpha1.RoleRun, "")
}

// supervisorVolumeName names a session's supervisor volume, which lives as long as the Sandbox too.
func (s *scope) supervisorVolumeName() string {
	return dd.Name(s.names().WorkspaceOwner(), dsv1alpha1.RoleSupervise, "")
}

// runVolumeMounts mounts the run volume in a session's primary, and its supervisor volume read-only; a run
// has no Executions and neither.
func runVolumeMounts(s *scope) []dd.VolumeMount {
	if s.isRun() {
		return nil
	}
	return []dd.VolumeMount{
		{Volume: s.runVolumeName(), Target: dd.RunMountPath},
		{Volume: s.supervisorVolumeName(), Target: dd.SupervisorMountPath, ReadOnly: true},
	}
}

// runVolumeFootprint is the memory a Sandbox's run volume may hold.
func runVolumeFootprint(spec dsv1alpha1.SandboxSpec) int64 {
	if len(spec.Command) > 0 {
		return 0
	}
	return runVolumeBytes
}

// ensureRunVolume makes a session's run volume before its primary. Nothing needs to hold it between
// primaries: what it keeps matters only while the primary that mounts it runs. It also makes the supervisor
// volume and fills it with the supervisor, before any process of the primary can run: the primary mounts it
// read-only, so no command, not even one that runs as root, can replace the supervisor its Executions run
// under (docs/design/decisions/0028-commands-run-under-a-supervisor.md).
func (r *Reconciler) ensureRunVolume(ctx context.Context, s *scope) (bool, error) {
	if s.isRun() {
		return false, nil
	}
	_, err := r.Driver.EnsureVolume(ctx, dd.VolumeSpec{
		Name: s.runVolumeName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleRun, SizeBytes: runVolumeBytes,
	})
	if err != nil {
		return s.fail(dsv1alpha1.ReasonStartFailed, "creating the run volume", err)
	}
	_, err = r.Driver.EnsureVolume(ctx, dd.VolumeSpec{
		Name: s.supervisorVolumeName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleSupervise, Supervisor: r.Options.HolderImage,
	})
	if err != nil {
		return s.fail(dsv1alpha1.ReasonStartFailed, "filling the supervisor volume", err)
	}
	return false, nil
}
