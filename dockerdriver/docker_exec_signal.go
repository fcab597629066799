package dockerdriver

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// relaySignals sends each signal to the exec's process group until stop closes. A signal that comes before
// the exec's process exists is refused rather than held: it would reach a command that has not read a byte.
func (s *session) relaySignals(ctx context.Context, stop <-chan struct{}, signals <-chan Signal) {
	for {
		select {
		case <-stop:
			return
		case sig := <-signals:
			sig.Done <- s.signal(ctx, sig.Number)
		}
	}
}

// signal sends sig to the process group the exec's process leads (it leads a session of its own, so what it
// started runs in that group unless it made another), from the host: Docker has no call that signals one
// process of a container (docs/design/dataplane.md, "Signals and background processes").
func (s *session) signal(ctx context.Context, sig syscall.Signal) error {
	ins, err := s.d.cli.ContainerExecInspect(ctx, s.exec)
	switch {
	case err != nil:
		return s.d.classify(err, PhaseExec, s.name)
	case ins.Pid == 0:
		return NewError(KindConflict, PhaseExec, s.name, "the command has not started yet")
	case !ins.Running:
		return NewError(KindConflict, PhaseExec, s.name, "the command has ended")
	}
	return signalGroupInContainer(ins.Pid, s.container, s.name, sig)
}

// signalGroupInContainer signals the process group led by host PID leader if leader is in the cgroup of
// container id, so that a PID reused by another process of the host is never hit.
func signalGroupInContainer(leader int, id, name string, sig syscall.Signal) error {
	switch err := inContainer(leader, id); {
	case errors.Is(err, os.ErrNotExist):
		return errorf(KindUncertain, PhaseExec, name, "process %d is not in the agent's view: the agent must share the daemon's host PID namespace", leader)
	case errors.Is(err, errNotInContainer):
		return NewError(KindConflict, PhaseExec, name, "the command has ended")
	case err != nil:
		return errorf(KindUncertain, PhaseExec, name, "%v", err)
	}
	if err := syscall.Kill(-leader, sig); err != nil {
		return errorf(KindUncertain, PhaseExec, name, "signalling process group %d (the agent needs CAP_KILL and the daemon's host PID namespace): %v", leader, err)
	}
	return nil
}
