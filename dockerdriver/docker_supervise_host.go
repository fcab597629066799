package dockerdriver

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dockside-dev/dockside/internal/hostvolume"
)

// readOutput reads back what the supervisor kept of a run in container info: on the run volume's host side
// when the agent sees its mount there (readRunHost), which costs no call to the daemon but a volume
// inspection; otherwise through the archive API (readRun), skipped when a stat of each file says the
// command printed nothing (printedNothing). An archive read re-executes the daemon to walk the container's
// files, and costs as much as the exec itself on Docker 20.10 (docs/performance.md).
func (d *Docker) readOutput(ctx context.Context, info ContainerInfo, req ExecRequest) (ExecResult, error) {
	key := req.Supervised.Key
	if res, ok := d.readRunHost(ctx, info.RunVolume, key, req.OutputLimit); ok {
		return res, nil
	}
	if d.printedNothing(ctx, info.ID, key) {
		return ExecResult{}, nil
	}
	return d.readRun(ctx, info.ID, key, req.OutputLimit)
}

// readRunHost reads a run's folder on the host side of run volume volume (Options.HostVolumes), with the
// bounds readRunArchive keeps: at most limit bytes of each stream, the rest counted by the file's size, a
// file that is not a regular one read as empty, no link followed and no mount crossed. ok is false when that
// side cannot serve it (no access, the volume's mount not visible here, the run's folder not there or not a
// folder): the archive API reads it then, as it always did.
func (d *Docker) readRunHost(ctx context.Context, volume, key string, limit int) (res ExecResult, ok bool) {
	if !d.hostVolumes || volume == "" {
		return ExecResult{}, false
	}
	v, err := d.observeVolume(ctx, volume, PhaseExec)
	if err != nil || !v.Exists || v.Mountpoint == "" {
		return ExecResult{}, false
	}
	root := hostvolume.Root(v.Mountpoint, v.SizeBytes)
	if root == nil {
		return ExecResult{}, false
	}
	defer root.Close()
	return readRunIn(root, key, limit)
}

// readRunIn reads the folder of run key in the run volume whose root is root (readRunHost); ok is false when
// the folder is not there or not a folder.
func readRunIn(root *os.File, key string, limit int) (res ExecResult, ok bool) {
	dir, err := hostvolume.OpenIn(root, "runs/"+key, runsPath+"/"+key, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return ExecResult{}, false
	}
	defer dir.Close()
	var out, errs int64
	for _, name := range []string{"stdout", "stderr", "cut"} {
		f, size := openRunFile(dir, name)
		if f == nil {
			continue
		}
		switch name {
		case "stdout":
			res.Stdout, res.StdoutCut = readHead(f, limit, size)
		case "stderr":
			res.Stderr, res.StderrCut = readHead(f, limit, size)
		case "cut":
			out, errs = readCut(f)
		}
		f.Close()
	}
	res.StdoutCut, res.StderrCut = min(res.StdoutCut+out, cutMax), min(res.StderrCut+errs, cutMax)
	return res, true
}

// openRunFile opens one file of a run's folder for reading, with its size, when it is a regular file; nil
// otherwise (missing, a link, a FIFO, which O_NONBLOCK keeps from blocking the open): the command may have
// put anything there.
func openRunFile(dir *os.File, name string) (*os.File, int64) {
	f, err := hostvolume.OpenIn(dir, name, name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, 0
	}
	return f, st.Size()
}
