package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// hostUse is what this host spends on Docker's daemons, on one namespace's containerd shims, on the agent and
// on that namespace's container cgroups, in what a meter reads: memory at one moment, in bytes, or CPU time
// spent so far, in seconds. -1 where it cannot be read here (a daemon on another host, another cgroup layout).
type hostUse struct {
	daemon     float64 // dockerd and containerd (which also serve whatever else runs on the daemon meanwhile)
	shims      float64 // the containerd shims of the namespace's containers, one per container
	agent      float64
	containers float64
}

// meter reads one quantity of a process and of a container's cgroup; -1 where it cannot be read.
type meter struct {
	process   func(pid int) float64
	container func(id string) float64
}

var (
	// memoryMeter reads memory in bytes: a process's proportional set size (shared pages split among the
	// processes sharing them) and the memory charged to a container's cgroup.
	memoryMeter = meter{process: pss, container: cgroupMemory}
	// cpuMeter reads the CPU time, in seconds, a process and a container's cgroup have spent so far.
	cpuMeter = meter{process: processCPU, container: cgroupCPU}
)

// hostUse reads what the host spends on the agent and on the Sandboxes of ns.
func (e *env) hostUse(ns string) (hostUse, error) {
	ids, err := containerIDs(dsv1alpha1.LabelNode+"="+e.node, dsv1alpha1.LabelNamespace+"="+ns)
	if err != nil {
		return hostUse{}, err
	}
	return hostUseOf(ids, e.agent.Pid(), memoryMeter), nil
}

// containerIDs are the full IDs of the running containers carrying every label given ("key=value").
func containerIDs(labels ...string) ([]string, error) {
	args := []string{"container", "ls", "-q", "--no-trunc"}
	for _, l := range labels {
		args = append(args, "--filter", "label="+l)
	}
	out, err := docker(args...)
	return strings.Fields(out), err
}

// hostUseOf is what the host spends on the containers ids (their shims and cgroups), on Docker's daemons
// and on the process agent (none when 0), as m reads it. The daemons and shims gone between two readings
// are not counted in either.
func hostUseOf(ids []string, agent int, m meter) hostUse {
	u := hostUse{daemon: -1}
	if agent != 0 {
		u.agent = m.process(agent)
	}
	for _, p := range daemonProcesses(ids) {
		if used := m.process(p.pid); p.shim {
			u.shims += max(used, 0)
		} else if used >= 0 {
			u.daemon = max(u.daemon, 0) + used
		}
	}
	if u.daemon < 0 {
		u.shims = -1 // the daemon is not on this host
	}
	for _, id := range ids {
		used := m.container(id)
		if used < 0 {
			u.containers = -1
			break
		}
		u.containers += used
	}
	return u
}

// since is what u spent more than before, field by field; -1 where either could not be read.
func (u hostUse) since(before hostUse) hostUse {
	return hostUse{
		daemon: spent(before.daemon, u.daemon), shims: spent(before.shims, u.shims),
		agent: spent(before.agent, u.agent), containers: spent(before.containers, u.containers),
	}
}

// spent is after minus before, -1 when either could not be read.
func spent(before, after float64) float64 {
	if before < 0 || after < 0 {
		return -1
	}
	return after - before
}

// total is the daemons', the shims', the containers' and the agent's (0 when unread) together; -1 where one
// of the first three could not be read.
func (u hostUse) total() float64 {
	if u.daemon < 0 || u.shims < 0 || u.containers < 0 {
		return -1
	}
	return u.daemon + u.shims + u.containers + max(u.agent, 0)
}

// daemonProcess is a process of Docker's on this host: dockerd or containerd, or the shim of a container.
type daemonProcess struct {
	pid  int
	shim bool
}

// daemonProcesses are dockerd, containerd and the shims of the containers ids running on this host.
func daemonProcesses(ids []string) []daemonProcess {
	var out []daemonProcess
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(string(cmdline), "\x00")
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		switch filepath.Base(args[0]) {
		case "dockerd", "containerd":
			out = append(out, daemonProcess{pid: pid})
		case "containerd-shim-runc-v2", "containerd-shim":
			if i := slices.Index(args, "-id"); i >= 0 && i+1 < len(args) && slices.Contains(ids, args[i+1]) {
				out = append(out, daemonProcess{pid: pid, shim: true})
			}
		}
	}
	return out
}

// perSandboxMemory is what the host spent more after than before, per Sandbox of n.
func perSandboxMemory(before, after hostUse, n int) []figure {
	per := func(name string, b, a float64) figure {
		if b < 0 || a < 0 {
			return notMeasured(name, "MiB", "not readable on this host")
		}
		return figure{Name: name, Unit: "MiB", Dockside: num((a - b) / float64(n) / mib)}
	}
	return []figure{
		per("dockerd and containerd per idle Sandbox (proportional set size)", before.daemon, after.daemon),
		per("containerd shims per idle Sandbox (proportional set size)", before.shims, after.shims),
		per("agent per idle Sandbox (proportional set size)", before.agent, after.agent),
		per("charged to the Sandbox's own container cgroups, per idle Sandbox", before.containers, after.containers),
	}
}

// pss is a process's proportional set size in bytes, -1 if it cannot be read.
func pss(pid int) float64 {
	rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(rollup), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return -1
}

// cgroupMemory is the memory charged to a container's cgroup (v1 or v2, cgroupfs or systemd driver), -1 if
// it cannot be read.
func cgroupMemory(id string) float64 {
	for _, path := range []string{
		"/sys/fs/cgroup/memory/docker/" + id + "/memory.usage_in_bytes",
		"/sys/fs/cgroup/docker/" + id + "/memory.current",
		"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/memory.current",
	} {
		if data, err := os.ReadFile(path); err == nil {
			if n, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64); err == nil {
				return n
			}
		}
	}
	return -1
}
