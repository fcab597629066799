package dockerdriver

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// relaySignals sends each signal to the exec's process group until stop closes.
func (s *session) relaySignals(ctx context.Context, stop <-chan struct{}, signals <-chan Signal) {
	for {
		select {
		case <-stop:
			return
		case sig := <-signals:
			sig.Done <- s.signal(ctx, stop, sig.Number)
		}
	}
}

// pidPoll is how often an exec is inspected while Docker does not know its PID yet.
const pidPoll = 20 * time.Millisecond

// signal sends sig to the process group the exec's process leads (it leads a session of its own, so what it
// started runs in that group unless it made another), from the host: Docker has no call that signals one
// process of a container (docs/design/dataplane.md, "Signals and background processes"). Docker records the
// PID a moment after the command starts, at times after its first output reached the client: until then the
// signal waits, for the PID, the exec's end (stop) or ctx, rather than be refused as if the command had ended.
// Conflict means that it has ended.
func (s *session) signal(ctx context.Context, stop <-chan struct{}, sig syscall.Signal) error {
	if !s.hostPIDs {
		return refusedUnderGVisor(s.name, s.runtime, "signals are not relayed, since gVisor's processes are not the host's")
	}
	tick := time.NewTicker(pidPoll)
	defer tick.Stop()
	for {
		ins, err := s.d.cli.ContainerExecInspect(ctx, s.exec)
		switch {
		case err != nil:
			return s.d.classify(err, PhaseExec, s.name)
		case ins.Pid != 0 && ins.Running:
			return signalGroupInContainer(ins.Pid, s.container, s.name, sig)
		case ins.Pid != 0:
			return NewError(KindConflict, PhaseExec, s.name, "the command has ended")
		}
		select {
		case <-stop:
			return NewError(KindConflict, PhaseExec, s.name, "the command has ended")
		case <-ctx.Done():
			return errorf(KindUncertain, PhaseExec, s.name, "Docker did not report the command's process before the signal was given up: %v", ctx.Err())
		case <-tick.C:
		}
	}
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
