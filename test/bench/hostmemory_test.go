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

// hostUse is what this host spends at one moment, in bytes: the proportional set size (shared pages split
// among the processes sharing them) of Docker's daemons, of one namespace's containerd shims and of the
// agent, and the memory charged to that namespace's container cgroups. -1 where it cannot be read here
// (a daemon on another host, another cgroup layout).
type hostUse struct {
	daemon     float64 // dockerd and containerd (which also serve whatever else runs on the daemon meanwhile)
	shims      float64 // the containerd shims of the namespace's containers, one per container
	agent      float64
	containers float64
}

// hostUse reads what the host spends on the agent and on the Sandboxes of ns.
func (e *env) hostUse(ns string) (hostUse, error) {
	ids, err := containerIDs(dsv1alpha1.LabelNode+"="+e.node, dsv1alpha1.LabelNamespace+"="+ns)
	if err != nil {
		return hostUse{}, err
	}
	return hostUseOf(ids, e.agent.Pid()), nil
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
// and on the process agent (none when 0).
func hostUseOf(ids []string, agent int) hostUse {
	u := hostUse{daemon: -1}
	if agent != 0 {
		u.agent = pss(agent)
	}
	for _, p := range daemonProcesses(ids) {
		if used := pss(p.pid); p.shim {
			u.shims += max(used, 0)
		} else if used >= 0 {
			u.daemon = max(u.daemon, 0) + used
		}
	}
	if u.daemon < 0 {
		u.shims = -1 // the daemon is not on this host
	}
	for _, id := range ids {
		used := cgroupMemory(id)
		if used < 0 {
			u.containers = -1
			break
		}
		u.containers += used
	}
	return u
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
