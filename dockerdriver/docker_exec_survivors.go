package dockerdriver

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// processes lists the live processes of the container by host PID, as seen from the host, so that nothing
// inside the container can hide or fake one. Zombies are left out: they run nothing and only wait for the
// container's init to reap them. Once the agent is known to see the daemon's processes (seesHostPIDs), they
// are read from its /proc (cgroupProcesses), which costs no call to the daemon: its `top` runs ps, 45 to 66 ms
// a call on a loaded 2-core machine, twice for each Execution (docs/performance.md). Until then, and when
// /proc cannot be read or shows none, the daemon lists them, and the first such list tells whether the agent
// sees them.
func (d *Docker) processes(ctx context.Context, id, name string) (map[string]bool, error) {
	if d.seesHostPIDs.Load() {
		// A running container has its first process at least: none found is a container that stopped, which
		// the daemon reports as such.
		if live, err := cgroupProcesses(id); err == nil && len(live) > 0 {
			return live, nil
		}
	}
	live, err := d.topProcesses(ctx, id, name)
	if err != nil || d.seesHostPIDs.Load() {
		return live, err
	}
	for p := range live {
		// One is enough: the agent sees all of the daemon's processes or none (killSession does the same).
		if pid, err := strconv.Atoi(p); err == nil && inContainer(pid, id) == nil {
			d.seesHostPIDs.Store(true)
			break
		}
	}
	return live, nil
}

// topProcesses lists the live processes of the container by host PID as the daemon reports them (docker top).
func (d *Docker) topProcesses(ctx context.Context, id, name string) (map[string]bool, error) {
	top, err := d.cli.ContainerTop(ctx, id, []string{"-o", "pid,stat"})
	if err != nil {
		return nil, d.classify(err, PhaseExec, name)
	}
	pid, stat := slices.Index(top.Titles, "PID"), slices.Index(top.Titles, "STAT")
	if pid < 0 || stat < 0 {
		return nil, NewError(KindUncertain, PhaseExec, name, "the daemon's process list has no PID or STAT column")
	}
	live := map[string]bool{}
	for _, p := range top.Processes {
		if len(p) > max(pid, stat) && !strings.HasPrefix(p[stat], "Z") {
			live[p[pid]] = true
		}
	}
	return live, nil
}

// killSurvivors kills the container when processes that were not there before the exec still live after its
// command exited. A PID reused within one exec by a new process would be missed; the kernel hands PIDs out
// in increasing order, so that takes the PID space wrapping around during the exec.
func (d *Docker) killSurvivors(ctx context.Context, id, name string, before map[string]bool, res ExecResult) (ExecResult, error) {
	after, err := d.processes(ctx, id, name)
	if err != nil {
		// What the command left behind is unknown: end it all rather than leave it running.
		res.ContainerKilled = d.kill(ctx, id, name) == nil
		return res, err
	}
	for pid := range after {
		if !before[pid] {
			res.Survivors++
		}
	}
	if res.Survivors == 0 {
		return res, nil
	}
	err = d.kill(ctx, id, name)
	res.ContainerKilled = err == nil
	return res, err
}
