package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pythonFilesMiB is the size of the file BenchmarkPythonFiles copies in and out.
const pythonFilesMiB = 10

// BenchmarkPythonFiles times the Python client's files.write and files.read (clients/python) of a 10 MiB
// random file, against `docker cp` of the same file into and out of the same Sandbox's primary in the same
// run, in MB/s; the client checks that what it reads back is what it wrote.
func BenchmarkPythonFiles(b *testing.B) {
	e, ns := benchNamespace(b, "python-files")
	ctx := context.Background()
	sbx := session(ns, "py")
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	local, _, err := randomFile(filepath.Join(runDir, "python-files-in.bin"), pythonFilesMiB*mib)
	if err != nil {
		b.Fatal(err)
	}
	byHandIn, byHandOut, err := dockerCopyInOut(sbx.Status.ContainerID, local, filepath.Join(runDir, "python-docker-out.bin"))
	if err != nil {
		b.Fatal(err)
	}
	write, read, err := pythonFiles(e.cp.Kubeconfig, ns, sbx.Name, local, "/workspace/python.bin")
	if err != nil {
		b.Fatal(err)
	}
	size := int64(pythonFilesMiB * mib)
	record(b, group{
		Key:      "python-files",
		Title:    fmt.Sprintf("Python client files.write and files.read of a %d MiB file", pythonFilesMiB),
		Baseline: "docker cp of the same file into and out of the Sandbox's primary container",
		Figures: []figure{
			{Name: "write", Unit: "MB/s", Dockside: mbps(size, write), Baseline: mbps(size, byHandIn)},
			{Name: "read", Unit: "MB/s", Dockside: mbps(size, read), Baseline: mbps(size, byHandOut)},
		},
	})
}

// pythonFiles runs clients/python/bench/files_rounds.py once and returns the write and read it timed.
func pythonFiles(kubeconfig, ns, sandbox, local, remote string) (time.Duration, time.Duration, error) {
	out, err := pythonBench(kubeconfig, "files_rounds.py", ns, sandbox, local, remote).Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		return 0, 0, fmt.Errorf("files_rounds.py: %w: %s", err, stderr)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("files_rounds.py printed %q", out)
	}
	secs := make([]time.Duration, 2)
	for i, f := range fields {
		s, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("files_rounds.py printed %q", out)
		}
		secs[i] = time.Duration(s * float64(time.Second))
	}
	return secs[0], secs[1], nil
}
