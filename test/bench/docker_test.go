package bench

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// The baselines do by hand, with the Docker CLI, what a person would do without Dockside: the same image
// and the same limits and hardening the driver gives a session's primary container by default.
const (
	busybox = "dockside.dev/busybox:local"
	holder  = "dockside.dev/holder:local"
	// roleBaseline marks what the baselines create, so that cleanup finds it.
	roleBaseline = "bench-baseline"
)

// plainNode is the node label of what the baselines create: not the agent's node, so that the agent neither
// sees their events nor sweeps them as orphans, yet found by label like everything of the run.
func plainNode(node string) string { return node + "-plain" }

// docker runs the Docker CLI and returns its trimmed output.
func docker(args ...string) (string, error) { return dockercli.Run(args...) }

// baselineLabels are the labels every baseline object of the run of node carries.
func baselineLabels(node string) []string {
	return []string{"--label", dsv1alpha1.LabelManaged + "=true", "--label", dsv1alpha1.LabelNode + "=" + plainNode(node), "--label", dsv1alpha1.LabelRole + "=" + roleBaseline}
}

// runArgs is `docker run -d` of a container as locked down as a Sandbox's primary with default resources
// (cpu 1, memory 512Mi without swap, 256 pids), on network, with extra arguments before the image.
func runArgs(node, network string, extra ...string) []string {
	return append(hardened(node, network, "512m", "1", "256"), extra...)
}

// hardened is `docker run -d` with the hardening and log limits the driver gives every container, and
// the given limits.
func hardened(node, network, memory, cpus, pids string) []string {
	args := []string{"run", "-d", "-i", "--network", network,
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges:true", "--ipc", "private",
		"--memory", memory, "--memory-swap", memory, "--cpus", cpus, "--pids-limit", pids,
		"--no-healthcheck", "--restart", "no", "--log-opt", "max-size=10m", "--log-opt", "max-file=1"}
	return append(args, baselineLabels(node)...)
}

// tmpfsVolume creates a volume like a Sandbox's workspace: local, tmpfs-backed, 512Mi.
func tmpfsVolume(node, name string) error {
	args := append([]string{"volume", "create", "--driver", "local",
		"--opt", "type=tmpfs", "--opt", "device=tmpfs", "--opt", "o=size=512m"}, baselineLabels(node)...)
	_, err := docker(append(args, name)...)
	return err
}

// workspaceMount mounts volume at /workspace without copying the image's files into it, as the driver does.
func workspaceMount(volume string) []string {
	return []string{"--mount", "type=volume,src=" + volume + ",dst=/workspace,volume-nocopy"}
}

// dockerRun starts a container and waits until Docker reports it running, as a script would.
func dockerRun(args []string) (string, error) {
	id, err := docker(args...)
	if err != nil {
		return "", err
	}
	return id, waitRunning(id)
}

func waitRunning(id string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		out, err := docker("inspect", "-f", "{{.State.Running}}", id)
		if err != nil {
			return err
		}
		if out == "true" {
			return nil
		}
	}
	return fmt.Errorf("container %s not running after a minute", id)
}

// containerMemory is what `docker stats` reports each container using (bytes, cache excluded).
func containerMemory(ids []string) (map[string]float64, error) {
	out, err := docker(append([]string{"stats", "--no-stream", "--no-trunc", "--format", "{{.Container}} {{.MemUsage}}"}, ids...)...)
	if err != nil {
		return nil, err
	}
	mem := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line) // id, usage, "/", limit
		if len(fields) < 2 {
			continue
		}
		v, err := parseBytes(fields[1])
		if err != nil {
			return nil, err
		}
		mem[fields[0]] = v
	}
	return mem, nil
}

// parseBytes reads Docker's human sizes such as 1.5MiB or 532KiB.
func parseBytes(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		factor float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			return v * u.factor, err
		}
	}
	return 0, fmt.Errorf("unknown size %q", s)
}

// pausedSpan is how long Docker kept a container paused between since and until, from its pause and
// unpause events, as Docker itself timed them.
func pausedSpan(id string, since, until time.Time) (time.Duration, error) {
	out, err := docker("events", "--since", unixArg(since), "--until", unixArg(until),
		"--filter", "container="+id, "--filter", "event=pause", "--filter", "event=unpause",
		"--format", "{{.TimeNano}} {{.Action}}")
	if err != nil {
		return 0, err
	}
	var total time.Duration
	var at int64
	for _, line := range strings.Split(out, "\n") {
		var ns int64
		var action string
		if _, err := fmt.Sscan(line, &ns, &action); err != nil {
			continue
		}
		switch action {
		case "pause":
			at = ns
		case "unpause":
			if at != 0 {
				total += time.Duration(ns - at)
				at = 0
			}
		}
	}
	return total, nil
}

func unixArg(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
