package dockerdriver

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/dockside-dev/dockside/internal/supervision"
)

const (
	// supervisorMaxBytes bounds the supervisor read out of its image (it is about 1.5 MiB).
	supervisorMaxBytes = 8 << 20
	// runEntries bounds the entries read of a run's folder, which the command can fill with its own.
	runEntries = 8
	// cutMax bounds a count of dropped bytes read back: the file is the command's to change.
	cutMax = 1 << 50
	// runSlack is how far past the limit a run's file may go and still be read through to the next entry;
	// the supervisor's own never do.
	runSlack = 64 << 10
)

// placeSupervisor returns the supervisor that runs an exec in container info. A primary with a supervisor
// volume (read-only in it, so that not even a command running as root can replace what is there) runs the
// one in it when it holds this agent's version, and needs only the runs folder in its run volume, made again
// when a command removed it or put something else in its place. Any other primary (one made before there
// were supervisor volumes, or under an agent of another version) gets the supervisor in its run volume
// (installSupervisor); only Docker's word that the volume lacks it leads there, not a failed call.
func (d *Docker) placeSupervisor(ctx context.Context, info ContainerInfo, name, image string) (string, error) {
	if info.SupervisorVolume != "" {
		inVolume := SupervisorMountPath + "/" + path.Base(supervisorPath)
		st, err := d.cli.ContainerStatPath(ctx, info.ID, inVolume)
		switch {
		case err == nil && st.Mode.IsRegular():
			if st, err := d.cli.ContainerStatPath(ctx, info.ID, runsPath); err == nil && st.Mode.IsDir() {
				return inVolume, nil
			}
			return inVolume, d.copyRunFiles(ctx, info.ID, name, nil)
		case err != nil && !cerrdefs.IsNotFound(err):
			return "", d.classify(err, PhaseExec, name)
		}
	}
	return supervisorPath, d.installSupervisor(ctx, info, name, image)
}

// installSupervisor puts the supervisor into the container's run volume, a tmpfs that a new primary mounts
// empty. Docker writes it as root, mode 0555, and the runs folder 1777 and sticky, in which the command's
// user makes its run's folder. The volume's root is root's, mode 0755 (volumeRootMode), so no command that
// does not run as root can put anything there, and a supervisor found there is the agent's. A run volume
// made before that has a root every user may write to: a command could have planted a supervisor of its own
// there before the first Execution, so there the supervisor is written each time, over whatever is in its
// place (once it is root's, the sticky root keeps any other user from replacing it until then). So is it in
// a container that runs as root, which owns the volume's root: what is there may be its own. An older
// agent's supervisor is replaced with an empty file.
func (d *Docker) installSupervisor(ctx context.Context, info ContainerInfo, name, image string) error {
	id := info.ID
	root, err := d.cli.ContainerStatPath(ctx, id, RunMountPath)
	if err != nil {
		return d.classify(err, PhaseExec, name)
	}
	if root.Mode.Perm()&0o002 == 0 && nonRootUID(info.User) {
		if _, err := d.cli.ContainerStatPath(ctx, id, supervisorPath); err == nil {
			return nil
		}
	}
	bin, err := d.supervisor(ctx, image)
	if err != nil {
		return NewError(KindUnavailable, PhaseExec, name, fmt.Sprintf("reading the supervisor from %s: %v", image, err))
	}
	return d.copyRunFiles(ctx, id, name, bin)
}

// copyRunFiles writes the runs folder, 1777 and sticky, into the run volume of container id, and the
// supervisor bin (with an older agent's emptied) unless bin is nil.
func (d *Docker) copyRunFiles(ctx context.Context, id, name string, bin []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "runs/", Mode: 0o1777, ModTime: now})
	if bin != nil {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Base(supervisorV1Path), Mode: 0o444, ModTime: now})
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Base(supervisorPath), Mode: 0o555, Size: int64(len(bin)), ModTime: now})
		_, _ = tw.Write(bin)
	}
	_ = tw.Close()
	// What a command planted in these places (a folder, a link) is replaced too, not an error.
	err := d.cli.CopyToContainer(ctx, id, RunMountPath, &buf, container.CopyToContainerOptions{AllowOverwriteDirWithFile: true})
	return d.classify(err, PhaseExec, name)
}

// supervisor returns /dockside-supervise of the image, read once per image through docker save: no
// container is made for it, so none can be left behind. The image's SupervisorLabel must name the version
// this agent speaks: an older supervisor would run commands without the input they were given.
func (d *Docker) supervisor(ctx context.Context, image string) ([]byte, error) {
	d.supervisorMu.Lock()
	defer d.supervisorMu.Unlock()
	if b, ok := d.supervisors[image]; ok {
		return b, nil
	}
	info, err := d.InspectImage(ctx, image)
	switch {
	case err != nil:
		return nil, err
	case info.Labels[SupervisorLabel] != supervision.Version:
		return nil, fmt.Errorf("its supervisor is of version %q where this agent needs %q: build the image again (hack/build-images.sh)",
			info.Labels[SupervisorLabel], supervision.Version)
	}
	rc, err := d.cli.ImageSave(ctx, []string{image})
	if err != nil {
		return nil, fmt.Errorf("docker save: %w", err)
	}
	defer rc.Close()
	b, err := fileInSave(rc, "dockside-supervise")
	if err != nil {
		return nil, err
	}
	if d.supervisors == nil {
		d.supervisors = map[string][]byte{}
	}
	d.supervisors[image] = b
	return b, nil
}

// fileInSave finds a file at the root of an image in a docker save stream: each layer is a tar inside the
// tar, and the last layer that has the file wins, as in the image's file system.
func fileInSave(r io.Reader, file string) ([]byte, error) {
	layers := map[string][]byte{}
	var manifest []struct{ Layers []string }
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the saved image: %w", err)
		}
		switch {
		case h.Name == "manifest.json":
			if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&manifest); err != nil {
				return nil, fmt.Errorf("reading the saved image's manifest: %w", err)
			}
		case strings.HasSuffix(h.Name, ".tar") || strings.HasPrefix(h.Name, "blobs/"):
			if b, err := fileInLayer(tr, file); err == nil && b != nil {
				layers[h.Name] = b
			}
		}
	}
	var found []byte
	for _, m := range manifest {
		for _, l := range m.Layers {
			if b, ok := layers[l]; ok {
				found = b
			}
		}
	}
	if found == nil {
		return nil, errNoSupervisor
	}
	return found, nil
}

// fileInLayer reads file out of one layer's tar; nil when the layer does not have it.
func fileInLayer(r io.Reader, file string) ([]byte, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("reading a layer: %w", err)
		}
		if path.Clean("/"+h.Name) == "/"+file && h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(io.LimitReader(tr, supervisorMaxBytes+1))
			if err == nil && len(b) > supervisorMaxBytes {
				err = errors.New("the supervisor is too large")
			}
			return b, err
		}
	}
}

// printedNothing tells whether the run's output files are both there and empty, from their stat alone: then
// there is nothing to read back, and none was cut, since the supervisor keeps the first bytes of a stream
// (ExecRequest.OutputLimit is at least 1) before it counts any. The archive read this spares costs about as
// much as the exec itself, a stat a hundredth of that (docs/performance.md), and many commands print nothing.
func (d *Docker) printedNothing(ctx context.Context, id, key string) bool {
	for _, stream := range []string{"stdout", "stderr"} {
		st, err := d.cli.ContainerStatPath(ctx, id, runsPath+"/"+key+"/"+stream)
		if err != nil || !st.Mode.IsRegular() || st.Size != 0 {
			return false
		}
	}
	return true
}

// readRun reads back what the supervisor kept of a run: the first limit bytes of each stream and the
// counts of the rest. Everything in the folder is the command's to change, so no size in it is trusted:
// at most limit bytes are read of each file, a missing file is empty, and the read ends at ctx's deadline
// with what it has (only the end of ctx's parent is an error).
func (d *Docker) readRun(ctx context.Context, id, key string, limit int) (ExecResult, error) {
	rc, _, err := d.cli.CopyFromContainer(ctx, id, runsPath+"/"+key)
	if err != nil {
		if errors.Is(context.Cause(ctx), errReadBackTime) {
			return ExecResult{CutUnread: true}, nil
		}
		return ExecResult{}, ctx.Err() // the command removed its folder (or the supervisor never made it): no output kept
	}
	defer rc.Close()
	res := readRunArchive(rc, limit)
	switch {
	case errors.Is(context.Cause(ctx), errReadBackTime):
		res.CutUnread = true
	case ctx.Err() != nil:
		return res, ctx.Err()
	}
	return res, nil
}

// errReadBackTime is the cause of a read-back's end at its own deadline (readBackGrace).
var errReadBackTime = errors.New("the output took too long to read back")

// readRunArchive reads a run's folder out of its archive, reading at most limit+runSlack bytes of each of
// at most runEntries files. A file the supervisor wrote holds at most limit bytes; one the command made
// larger (a sparse file of gigabytes reads as zeros) is counted by its size and not read past: the entries
// after it are left unread, which CutUnread says.
func readRunArchive(r io.Reader, limit int) ExecResult {
	var res ExecResult
	var out, errs int64
	tr := tar.NewReader(r)
	for range runEntries {
		h, err := tr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				res.CutUnread = true
			}
			break
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		switch path.Base(h.Name) {
		case "stdout":
			res.Stdout, res.StdoutCut = readHead(tr, limit, h.Size)
		case "stderr":
			res.Stderr, res.StderrCut = readHead(tr, limit, h.Size)
		case "cut":
			out, errs = readCut(tr)
		}
		if h.Size > int64(limit)+runSlack {
			res.CutUnread = true // reaching the next entry would read the rest of this one
			break
		}
	}
	res.StdoutCut, res.StderrCut = min(res.StdoutCut+out, cutMax), min(res.StderrCut+errs, cutMax)
	return res
}

// readHead reads at most limit bytes of a file of size bytes, and counts the rest as cut without reading it.
func readHead(r io.Reader, limit int, size int64) ([]byte, int64) {
	b, _ := io.ReadAll(io.LimitReader(r, int64(limit)))
	return b, max(size-int64(len(b)), 0)
}

// readCut reads the supervisor's "STDOUT STDERR" counts of dropped bytes; anything else counts as none.
func readCut(r io.Reader) (int64, int64) {
	b, _ := io.ReadAll(io.LimitReader(r, 64))
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	out, err1 := strconv.ParseInt(f[0], 10, 64)
	errs, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || out < 0 || errs < 0 {
		return 0, 0
	}
	return min(out, cutMax), min(errs, cutMax)
}
