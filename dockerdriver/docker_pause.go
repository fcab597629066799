package dockerdriver

import "context"

// PauseContainer freezes the running container; a paused one is left alone.
func (d *Docker) PauseContainer(ctx context.Context, name string) error {
	info, err := d.running(ctx, name, PhasePause)
	if err != nil || info.State == StatePaused {
		return err
	}
	return d.classify(d.cli.ContainerPause(ctx, info.ID), PhasePause, name)
}

// UnpauseContainer thaws the paused container; a running one is left alone.
func (d *Docker) UnpauseContainer(ctx context.Context, name string) error {
	info, err := d.running(ctx, name, PhasePause)
	if err != nil || info.State == StateRunning {
		return err
	}
	return d.classify(d.cli.ContainerUnpause(ctx, info.ID), PhasePause, name)
}

// running observes an owned container that is running or paused; anything else is NotFound or Conflict.
func (d *Docker) running(ctx context.Context, name string, phase Phase) (ContainerInfo, error) {
	info, err := d.owned(ctx, name, phase)
	switch {
	case err != nil:
		return ContainerInfo{}, err
	case !info.Exists:
		return ContainerInfo{}, NewError(KindNotFound, phase, name, "the container does not exist")
	case info.State != StateRunning && info.State != StatePaused:
		return ContainerInfo{}, errorf(KindConflict, phase, name, "the container is %s, not running", info.State)
	}
	return info, nil
}
