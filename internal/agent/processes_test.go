package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"

	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/controller/sandbox"
)

func TestProcessRoom(t *testing.T) {
	for name, c := range map[string]struct {
		opts              Options
		pidMax, threadMax string // the host's /proc/sys/kernel files
		hostCPUs          int    // docker info's NCPU
		allocatable, per  sandbox.Holding
	}{
		"read from the host, the least of pid_max and threads-max less a tenth": {
			pidMax: "32768\n", threadMax: "192735\n", hostCPUs: 2,
			allocatable: sandbox.Holding{Pids: 32768 - 3276, MilliCPU: 2 * 1000 * DefaultCPUOvercommit},
			per:         sandbox.Holding{Pids: 32768 - 3276, MilliCPU: 2000},
		},
		"threads-max when it is less; at least 1024 kept": {
			pidMax: "4194304\n", threadMax: "8000\n", hostCPUs: 4,
			allocatable: sandbox.Holding{Pids: 8000 - 1024, MilliCPU: 4 * 1000 * DefaultCPUOvercommit},
			per:         sandbox.Holding{Pids: 8000 - 1024, MilliCPU: 4000},
		},
		"configured, with overcommit factors": {
			opts:   Options{NodePids: 100000, NodeCPUs: 8, PidsOvercommit: 2, CPUOvercommit: 1.5},
			pidMax: "not read", threadMax: "not read", hostCPUs: 2,
			allocatable: sandbox.Holding{Pids: 2 * 90000, MilliCPU: 12000},
			per:         sandbox.Holding{Pids: 90000, MilliCPU: 8000},
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for file, content := range map[string]string{"pid_max": c.pidMax, "threads-max": c.threadMax} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			defer func(was string) { procKernel = was }(procKernel)
			procKernel = dir
			d := fake.New("node-a")
			d.SetHostCPUs(c.hostCPUs)
			o := c.opts
			o.Node, o.Driver = "node-a", d
			if err := o.defaults(); err != nil {
				t.Fatal(err)
			}
			allocatable, per, err := processRoom(context.Background(), d, o, logr.Discard())
			if err != nil || allocatable != c.allocatable || per != c.per {
				t.Fatalf("processRoom = %+v, %+v, %v; want %+v, %+v", allocatable, per, err, c.allocatable, c.per)
			}
		})
	}
}

func TestProcessRoomRefuses(t *testing.T) {
	d := fake.New("node-a")
	for name, o := range map[string]Options{
		"a host with no pids beyond the reserve": {NodePids: 1024},
		"a negative overcommit":                  {CPUOvercommit: -1},
		"negative CPUs":                          {NodeCPUs: -2},
	} {
		t.Run(name, func(t *testing.T) {
			o.Node, o.Driver = "node-a", d
			err := o.defaults()
			if err == nil {
				_, _, err = processRoom(context.Background(), d, o, logr.Discard())
			}
			if err == nil {
				t.Fatal("accepted")
			}
		})
	}
	defer func(was string) { procKernel = was }(procKernel)
	procKernel = t.TempDir() // no pid_max there
	o := Options{Node: "node-a", Driver: d}
	if err := o.defaults(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := processRoom(context.Background(), d, o, logr.Discard()); err == nil {
		t.Fatal("an unreadable pid_max was accepted without --node-pids")
	}
}
