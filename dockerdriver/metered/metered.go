// Package metered wraps a Driver the way the agent uses it: every call measured, bounded and, within a traced
// piece of work, a span of its own (docs/tracing.md).
package metered

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/trace"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// Wrap wraps a driver the way the agent uses it: each call is measured (latency, and errors by phase
// and kind) and bounded by timeout, so that a daemon that stops answering holds up one pass, not a worker
// for ever. Exec and Stop get their own duration on top; copies, pulls, streamed execs and the event stream are not bounded,
// as they last as long as their data does.
func Wrap(d dd.Driver, timeout time.Duration) dd.Driver {
	return &instrumented{next: d, timeout: timeout}
}

type instrumented struct {
	next    dd.Driver
	timeout time.Duration
}

var _ dd.Driver = (*instrumented)(nil)

// measure runs one bounded call of op (whose failures are reported in phase unless the error names its own).
// Within a traced piece of work the call is a child span, named for op and failed with the error's kind only.
func measure[T any](d *instrumented, ctx context.Context, op string, phase dd.Phase, extra time.Duration, call func(context.Context) (T, error)) (v T, err error) {
	if tracing.Active(ctx) {
		var span trace.Span
		ctx, span = tracing.Start(ctx, "docker."+op, tracing.DockerOperation(op))
		defer func() { tracing.End(span, err, string(dd.KindOf(err))) }()
	}
	if d.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout+extra)
		defer cancel()
	}
	start := time.Now()
	v, err = call(ctx)
	dockerSeconds.WithLabelValues(op, string(phase)).Observe(time.Since(start).Seconds())
	if err != nil {
		if p := dd.PhaseOf(err); p != "" {
			phase = p
		}
		dockerErrors.WithLabelValues(op, string(phase), string(dd.KindOf(err))).Inc()
	}
	return v, err
}

// measureErr is measure for calls that return only an error.
func measureErr(d *instrumented, ctx context.Context, op string, phase dd.Phase, extra time.Duration, call func(context.Context) error) error {
	_, err := measure(d, ctx, op, phase, extra, func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) })
	return err
}

func (d *instrumented) Ping(ctx context.Context) (dd.Version, error) {
	return measure(d, ctx, "Ping", dd.PhaseConnect, 0, d.next.Ping)
}

func (d *instrumented) Security(ctx context.Context) (dd.SecurityInfo, error) {
	return measure(d, ctx, "Security", dd.PhaseConnect, 0, d.next.Security)
}

func (d *instrumented) Storage(ctx context.Context) (dd.StorageInfo, error) {
	return measure(d, ctx, "Storage", dd.PhaseConnect, 0, d.next.Storage)
}

func (d *instrumented) Init(ctx context.Context) (dd.InitInfo, error) {
	return measure(d, ctx, "Init", dd.PhaseConnect, 0, d.next.Init)
}

func (d *instrumented) HostMemory(ctx context.Context) (int64, error) {
	return measure(d, ctx, "HostMemory", dd.PhaseConnect, 0, d.next.HostMemory)
}

func (d *instrumented) HostCPUs(ctx context.Context) (int, error) {
	return measure(d, ctx, "HostCPUs", dd.PhaseConnect, 0, d.next.HostCPUs)
}

func (d *instrumented) Runtimes(ctx context.Context) ([]string, error) {
	return measure(d, ctx, "Runtimes", dd.PhaseConnect, 0, d.next.Runtimes)
}

func (d *instrumented) InspectImage(ctx context.Context, ref string) (dd.ImageInfo, error) {
	return measure(d, ctx, "InspectImage", dd.PhaseImage, 0, func(ctx context.Context) (dd.ImageInfo, error) {
		return d.next.InspectImage(ctx, ref)
	})
}

func (d *instrumented) RemoveImage(ctx context.Context, ref string) error {
	return measureErr(d, ctx, "RemoveImage", dd.PhaseImage, 0, func(ctx context.Context) error {
		return d.next.RemoveImage(ctx, ref)
	})
}

func (d *instrumented) ListImages(ctx context.Context, match map[string]string) ([]dd.ImageSummary, error) {
	return measure(d, ctx, "ListImages", dd.PhaseObserve, 0, func(ctx context.Context) ([]dd.ImageSummary, error) {
		return d.next.ListImages(ctx, match)
	})
}

func (d *instrumented) PullImage(ctx context.Context, ref string, auth *dd.RegistryAuth, progress func(dd.PullProgress)) (dd.PullResult, error) {
	unbounded := &instrumented{next: d.next} // bounded by the pulls' waiters instead (see ImagePuller)
	return measure(unbounded, ctx, "PullImage", dd.PhaseImage, 0, func(ctx context.Context) (dd.PullResult, error) {
		return d.next.PullImage(ctx, ref, auth, progress)
	})
}

func (d *instrumented) EnsureNetwork(ctx context.Context, spec dd.NetworkSpec) (dd.NetworkInfo, error) {
	return measure(d, ctx, "EnsureNetwork", dd.PhaseNetwork, 0, func(ctx context.Context) (dd.NetworkInfo, error) {
		return d.next.EnsureNetwork(ctx, spec)
	})
}

func (d *instrumented) ObserveNetwork(ctx context.Context, name string) (dd.NetworkInfo, error) {
	return measure(d, ctx, "ObserveNetwork", dd.PhaseObserve, 0, func(ctx context.Context) (dd.NetworkInfo, error) {
		return d.next.ObserveNetwork(ctx, name)
	})
}

func (d *instrumented) RemoveNetwork(ctx context.Context, name string) error {
	return measureErr(d, ctx, "RemoveNetwork", dd.PhaseRemove, 0, func(ctx context.Context) error {
		return d.next.RemoveNetwork(ctx, name)
	})
}

func (d *instrumented) ListNetworks(ctx context.Context, match map[string]string) ([]dd.NetworkInfo, error) {
	return measure(d, ctx, "ListNetworks", dd.PhaseObserve, 0, func(ctx context.Context) ([]dd.NetworkInfo, error) {
		return d.next.ListNetworks(ctx, match)
	})
}

func (d *instrumented) EnsureVolume(ctx context.Context, spec dd.VolumeSpec) (dd.VolumeInfo, error) {
	return measure(d, ctx, "EnsureVolume", dd.PhaseVolume, 0, func(ctx context.Context) (dd.VolumeInfo, error) {
		return d.next.EnsureVolume(ctx, spec)
	})
}

func (d *instrumented) ObserveVolume(ctx context.Context, name string) (dd.VolumeInfo, error) {
	return measure(d, ctx, "ObserveVolume", dd.PhaseObserve, 0, func(ctx context.Context) (dd.VolumeInfo, error) {
		return d.next.ObserveVolume(ctx, name)
	})
}

func (d *instrumented) RemoveVolume(ctx context.Context, name string) error {
	return measureErr(d, ctx, "RemoveVolume", dd.PhaseRemove, 0, func(ctx context.Context) error {
		return d.next.RemoveVolume(ctx, name)
	})
}

func (d *instrumented) ListVolumes(ctx context.Context, match map[string]string) ([]dd.VolumeInfo, error) {
	return measure(d, ctx, "ListVolumes", dd.PhaseObserve, 0, func(ctx context.Context) ([]dd.VolumeInfo, error) {
		return d.next.ListVolumes(ctx, match)
	})
}

func (d *instrumented) EnsureContainer(ctx context.Context, spec dd.ContainerSpec) (dd.ContainerInfo, error) {
	return measure(d, ctx, "EnsureContainer", dd.PhaseCreate, 0, func(ctx context.Context) (dd.ContainerInfo, error) {
		return d.next.EnsureContainer(ctx, spec)
	})
}

func (d *instrumented) StartContainer(ctx context.Context, name string) error {
	return measureErr(d, ctx, "StartContainer", dd.PhaseStart, 0, func(ctx context.Context) error {
		return d.next.StartContainer(ctx, name)
	})
}

func (d *instrumented) ObserveContainer(ctx context.Context, name string) (dd.ContainerInfo, error) {
	return measure(d, ctx, "ObserveContainer", dd.PhaseObserve, 0, func(ctx context.Context) (dd.ContainerInfo, error) {
		return d.next.ObserveContainer(ctx, name)
	})
}

func (d *instrumented) StopContainer(ctx context.Context, name string, grace time.Duration) error {
	return measureErr(d, ctx, "StopContainer", dd.PhaseStop, grace, func(ctx context.Context) error {
		return d.next.StopContainer(ctx, name, grace)
	})
}

func (d *instrumented) RemoveContainer(ctx context.Context, name string) error {
	return measureErr(d, ctx, "RemoveContainer", dd.PhaseRemove, 0, func(ctx context.Context) error {
		return d.next.RemoveContainer(ctx, name)
	})
}

func (d *instrumented) ListContainers(ctx context.Context, match map[string]string) ([]dd.ContainerInfo, error) {
	return measure(d, ctx, "ListContainers", dd.PhaseObserve, 0, func(ctx context.Context) ([]dd.ContainerInfo, error) {
		return d.next.ListContainers(ctx, match)
	})
}

func (d *instrumented) PauseContainer(ctx context.Context, name string) error {
	return measureErr(d, ctx, "PauseContainer", dd.PhasePause, 0, func(ctx context.Context) error {
		return d.next.PauseContainer(ctx, name)
	})
}

func (d *instrumented) UnpauseContainer(ctx context.Context, name string) error {
	return measureErr(d, ctx, "UnpauseContainer", dd.PhasePause, 0, func(ctx context.Context) error {
		return d.next.UnpauseContainer(ctx, name)
	})
}

func (d *instrumented) Exec(ctx context.Context, name string, req dd.ExecRequest) (dd.ExecResult, error) {
	return measure(d, ctx, "Exec", dd.PhaseExec, req.Timeout, func(ctx context.Context) (dd.ExecResult, error) {
		return d.next.Exec(ctx, name, req)
	})
}

// ResumeExec is bounded by what is left of the exec's deadline, as Exec is by all of it.
func (d *instrumented) ResumeExec(ctx context.Context, name string, ref dd.ExecRef, req dd.ExecRequest, left time.Duration) (dd.ExecResult, error) {
	return measure(d, ctx, "ResumeExec", dd.PhaseExec, left, func(ctx context.Context) (dd.ExecResult, error) {
		return d.next.ResumeExec(ctx, name, ref, req, left)
	})
}

// StreamExec is not bounded: an interactive command lasts as long as its client keeps it.
func (d *instrumented) StreamExec(ctx context.Context, name string, req dd.StreamExecRequest) (dd.StreamExecResult, error) {
	unbounded := &instrumented{next: d.next}
	return measure(unbounded, ctx, "StreamExec", dd.PhaseExec, 0, func(ctx context.Context) (dd.StreamExecResult, error) {
		return d.next.StreamExec(ctx, name, req)
	})
}

func (d *instrumented) CopyFrom(ctx context.Context, name, path string) (io.ReadCloser, error) {
	unbounded := &instrumented{next: d.next}
	return measure(unbounded, ctx, "CopyFrom", dd.PhaseCopy, 0, func(ctx context.Context) (io.ReadCloser, error) {
		return d.next.CopyFrom(ctx, name, path)
	})
}

func (d *instrumented) CopyTo(ctx context.Context, name, dir string, tar io.Reader) error {
	unbounded := &instrumented{next: d.next}
	return measureErr(unbounded, ctx, "CopyTo", dd.PhaseCopy, 0, func(ctx context.Context) error {
		return d.next.CopyTo(ctx, name, dir, tar)
	})
}

func (d *instrumented) CopyToAsUser(ctx context.Context, name, dir string, tar io.Reader) error {
	unbounded := &instrumented{next: d.next}
	return measureErr(unbounded, ctx, "CopyToAsUser", dd.PhaseCopy, 0, func(ctx context.Context) error {
		return d.next.CopyToAsUser(ctx, name, dir, tar)
	})
}

func (d *instrumented) StatPath(ctx context.Context, name, path string) (dd.PathStat, error) {
	return measure(d, ctx, "StatPath", dd.PhaseCopy, 0, func(ctx context.Context) (dd.PathStat, error) {
		return d.next.StatPath(ctx, name, path)
	})
}

func (d *instrumented) RenamePath(ctx context.Context, name, from, to string) error {
	return measureErr(d, ctx, "RenamePath", dd.PhaseExec, dd.PathCommandTimeout, func(ctx context.Context) error {
		return d.next.RenamePath(ctx, name, from, to)
	})
}

func (d *instrumented) RemovePath(ctx context.Context, name, path string, recursive bool) error {
	return measureErr(d, ctx, "RemovePath", dd.PhaseExec, dd.PathCommandTimeout, func(ctx context.Context) error {
		return d.next.RemovePath(ctx, name, path, recursive)
	})
}

func (d *instrumented) LogTail(ctx context.Context, name string, maxBytes int) (dd.LogTail, error) {
	return measure(d, ctx, "LogTail", dd.PhaseObserve, 0, func(ctx context.Context) (dd.LogTail, error) {
		return d.next.LogTail(ctx, name, maxBytes)
	})
}

func (d *instrumented) Events(ctx context.Context) <-chan dd.Event { return d.next.Events(ctx) }
