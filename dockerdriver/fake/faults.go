package fake

import (
	"context"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Op names a driver operation, for fault injection and call counts.
type Op string

const (
	OpPing             Op = "Ping"
	OpSecurity         Op = "Security"
	OpStorage          Op = "Storage"
	OpHostMemory       Op = "HostMemory"
	OpInit             Op = "Init"
	OpHostCPUs         Op = "HostCPUs"
	OpRuntimes         Op = "Runtimes"
	OpInspectImage     Op = "InspectImage"
	OpPullImage        Op = "PullImage"
	OpRemoveImage      Op = "RemoveImage"
	OpListImages       Op = "ListImages"
	OpEnsureNetwork    Op = "EnsureNetwork"
	OpObserveNetwork   Op = "ObserveNetwork"
	OpRemoveNetwork    Op = "RemoveNetwork"
	OpListNetworks     Op = "ListNetworks"
	OpEnsureVolume     Op = "EnsureVolume"
	OpObserveVolume    Op = "ObserveVolume"
	OpRemoveVolume     Op = "RemoveVolume"
	OpListVolumes      Op = "ListVolumes"
	OpEnsureContainer  Op = "EnsureContainer"
	OpStartContainer   Op = "StartContainer"
	OpObserveContainer Op = "ObserveContainer"
	OpStopContainer    Op = "StopContainer"
	OpRemoveContainer  Op = "RemoveContainer"
	OpListContainers   Op = "ListContainers"
	OpPauseContainer   Op = "PauseContainer"
	OpUnpauseContainer Op = "UnpauseContainer"
	OpExec             Op = "Exec"
	OpResumeExec       Op = "ResumeExec"
	OpStreamExec       Op = "StreamExec"
	OpCopyFrom         Op = "CopyFrom"
	OpCopyTo           Op = "CopyTo"
	OpCopyToAsUser     Op = "CopyToAsUser"
	OpStatPath         Op = "StatPath"
	OpRenamePath       Op = "RenamePath"
	OpRemovePath       Op = "RemovePath"
	OpLogTail          Op = "LogTail"
)

// phases is the phase a real driver would name for a failure of each operation.
var phases = map[Op]dd.Phase{
	OpPing: dd.PhaseConnect, OpSecurity: dd.PhaseConnect, OpStorage: dd.PhaseConnect, OpHostMemory: dd.PhaseConnect, OpHostCPUs: dd.PhaseConnect, OpRuntimes: dd.PhaseConnect,
	OpInspectImage: dd.PhaseImage, OpPullImage: dd.PhaseImage, OpRemoveImage: dd.PhaseImage, OpListImages: dd.PhaseObserve,
	OpEnsureNetwork: dd.PhaseNetwork, OpObserveNetwork: dd.PhaseObserve, OpRemoveNetwork: dd.PhaseRemove,
	OpListNetworks: dd.PhaseObserve, OpEnsureVolume: dd.PhaseVolume, OpObserveVolume: dd.PhaseObserve,
	OpRemoveVolume: dd.PhaseRemove, OpListVolumes: dd.PhaseObserve, OpEnsureContainer: dd.PhaseCreate,
	OpStartContainer: dd.PhaseStart, OpObserveContainer: dd.PhaseObserve, OpStopContainer: dd.PhaseStop,
	OpRemoveContainer: dd.PhaseRemove, OpListContainers: dd.PhaseObserve, OpPauseContainer: dd.PhasePause,
	OpUnpauseContainer: dd.PhasePause, OpExec: dd.PhaseExec, OpResumeExec: dd.PhaseExec, OpStreamExec: dd.PhaseExec, OpCopyFrom: dd.PhaseCopy, OpCopyTo: dd.PhaseCopy,
	OpLogTail: dd.PhaseObserve, OpCopyToAsUser: dd.PhaseCopy, OpStatPath: dd.PhaseCopy, OpRenamePath: dd.PhaseExec,
	OpRemovePath: dd.PhaseExec,
}

type faultMode int

const (
	faultNone faultMode = iota
	faultFail           // fail without effect
	faultLose           // take effect, then report Uncertain
	faultHang           // block until ctx ends, without effect
)

type fault struct {
	mode faultMode
	kind dd.Kind
}

// FailNext makes the next call of op fail with kind, without effect.
func (f *Driver) FailNext(op Op, kind dd.Kind) { f.inject(op, fault{mode: faultFail, kind: kind}) }

// LoseNextResponse makes the next call of op take effect and then report Uncertain, as when the daemon
// did the work but the answer was lost on the way back.
func (f *Driver) LoseNextResponse(op Op) { f.inject(op, fault{mode: faultLose}) }

// HangNext makes the next call of op block until its context ends, then report Uncertain without effect.
func (f *Driver) HangNext(op Op) { f.inject(op, fault{mode: faultHang}) }

// SetUnavailable makes every call fail with Unavailable (daemon down) until set back to false.
func (f *Driver) SetUnavailable(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unavailable = down
}

// Calls counts the calls of op so far, faulted ones included.
func (f *Driver) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *Driver) inject(op Op, ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[op] = append(f.faults[op], ft)
}

// take counts a call of op and returns the fault to apply to it, if any.
func (f *Driver) take(op Op) (fault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.unavailable {
		return fault{mode: faultFail, kind: dd.KindUnavailable}, true
	}
	q := f.faults[op]
	if len(q) == 0 {
		return fault{}, false
	}
	f.faults[op] = q[1:]
	return q[0], true
}

// call runs apply as operation op, applying injected faults the way a real daemon and transport would
// show them. A context already over fails as Uncertain, like a real request cut short.
func call[T any](f *Driver, ctx context.Context, op Op, object string, apply func() (T, error)) (T, error) {
	var zero T
	phase := phases[op]
	ft, _ := f.take(op)
	switch {
	case ft.mode == faultFail && ft.kind == dd.KindUnavailable:
		return zero, dd.NewError(dd.KindUnavailable, phase, object, "Docker is not reachable at fake://: start the daemon or set DOCKER_HOST")
	case ft.mode == faultFail:
		return zero, dd.NewError(ft.kind, phase, object, "injected failure")
	case ft.mode == faultHang:
		<-ctx.Done()
		return zero, dd.NewError(dd.KindUncertain, phase, object, "the outcome is unknown")
	case ctx.Err() != nil:
		return zero, dd.NewError(dd.KindUncertain, phase, object, "the outcome is unknown")
	}
	v, err := apply()
	if ft.mode == faultLose {
		return zero, dd.NewError(dd.KindUncertain, phase, object, "the outcome is unknown")
	}
	return v, err
}
