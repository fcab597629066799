package dockerdriver

import (
	"context"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// LogTail returns the last maxBytes of the container's output (stdout and stderr as written). The whole log
// is read through a bounded buffer; Docker keeps at most logLimits of it, so Cut counts what was dropped of
// what Docker kept.
func (d *Docker) LogTail(ctx context.Context, name string, maxBytes int) (LogTail, error) {
	if maxBytes <= 0 {
		return LogTail{}, NewError(KindInvalidSpec, PhaseObserve, name, "a positive byte limit is required")
	}
	info, err := d.existing(ctx, name, PhaseObserve)
	if err != nil {
		return LogTail{}, err
	}
	rc, err := d.cli.ContainerLogs(ctx, info.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return LogTail{}, d.classify(err, PhaseObserve, name)
	}
	defer rc.Close()
	tail := &tailBuffer{limit: maxBytes}
	if _, err := stdcopy.StdCopy(tail, tail, rc); err != nil {
		return LogTail{}, d.classify(err, PhaseObserve, name)
	}
	return LogTail{Data: tail.buf, Cut: tail.cut}, nil
}
