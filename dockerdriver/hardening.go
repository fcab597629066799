package dockerdriver

import (
	"path"
	"regexp"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
)

// Docker refuses memory limits under 6 MiB; refusing them here gives a clearer error.
const minMemoryBytes = 6 << 20

// logLimits bound what Docker keeps of a container's output on disk, so untrusted output cannot fill it.
var logLimits = map[string]string{"max-size": "10m", "max-file": "1"}

// Docker's own name rule for containers, networks and volumes.
var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// validateContainerSpec refuses what cannot become a hardened container. Messages name fields, never
// values (which may be secrets).
func validateContainerSpec(spec ContainerSpec) error {
	bad := func(format string, args ...any) error {
		return errorf(KindInvalidSpec, PhaseCreate, spec.Name, format, args...)
	}
	switch {
	case !dockerName.MatchString(spec.Name):
		return bad("the container name is not a valid Docker name")
	case spec.Role == "":
		return bad("a role is required")
	case spec.Image == "":
		return bad("an image is required")
	case spec.Resources.MemoryBytes < minMemoryBytes:
		return bad("a memory limit of at least 6 MiB is required")
	case spec.Resources.NanoCPUs <= 0:
		return bad("a CPU limit is required")
	case spec.Resources.PIDs <= 0:
		return bad("a process (pids) limit is required")
	}
	for i, e := range spec.Env {
		if e.Name == "" || strings.ContainsAny(e.Name, "=\x00") {
			return bad("environment variable %d has an invalid name", i)
		}
	}
	if spec.Network.Name == "" && len(spec.Network.Aliases) > 0 {
		return bad("DNS aliases need a network")
	}
	targets := map[string]bool{}
	for _, t := range mountTargets(spec) {
		if !path.IsAbs(t) || path.Clean(t) != t || t == "/" {
			return bad("mount target %q must be a clean absolute path other than /", t)
		}
		if targets[t] {
			return bad("mount target %q is used twice", t)
		}
		targets[t] = true
	}
	for _, m := range spec.Mounts {
		if !dockerName.MatchString(m.Volume) {
			return bad("mount at %q must name a Dockside volume", m.Target)
		}
	}
	for _, t := range spec.Tmpfs {
		if t.SizeBytes <= 0 {
			return bad("tmpfs mount at %q needs a size", t.Target)
		}
	}
	return nil
}

func mountTargets(spec ContainerSpec) []string {
	var ts []string
	for _, m := range spec.Mounts {
		ts = append(ts, m.Target)
	}
	for _, t := range spec.Tmpfs {
		ts = append(ts, t.Target)
	}
	return ts
}

// uncoveredVolumes lists the image's declared VOLUMEs that no mount of the spec covers. Docker would back
// each with an anonymous volume on the host's disk, unbounded and outliving the container, so they are
// refused unless the spec mounts something of its own there.
func uncoveredVolumes(imageVolumes []string, spec ContainerSpec) []string {
	covered := map[string]bool{}
	for _, t := range mountTargets(spec) {
		covered[t] = true
	}
	var out []string
	for _, v := range imageVolumes {
		if !covered[path.Clean(v)] {
			out = append(out, v)
		}
	}
	return out
}

// createRequest translates a validated spec into Docker's create request and adds the hardening every
// container gets. Nothing in ContainerSpec can switch any of it off.
func createRequest(node string, spec ContainerSpec) (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		Env:        envList(spec.Env),
		WorkingDir: spec.WorkingDir,
		User:       spec.User,
		Hostname:   spec.Hostname,
		Labels:     Labels(node, spec.Owner, spec.Role, spec.Service),
		// The image's own health check would run commands the controllers did not ask for.
		Healthcheck: &container.HealthConfig{Test: []string{"NONE"}},
	}
	pids := spec.Resources.PIDs
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(networkMode(spec.Network)),
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true"},
		Privileged:  false,
		IpcMode:     container.IPCModePrivate,
		Mounts:      mounts(spec),
		LogConfig:   container.LogConfig{Type: "json-file", Config: logLimits},
		Resources: container.Resources{
			Memory:     spec.Resources.MemoryBytes,
			MemorySwap: spec.Resources.MemoryBytes, // equal to Memory: no swap on top
			NanoCPUs:   spec.Resources.NanoCPUs,
			PidsLimit:  &pids,
		},
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
	}
	var netCfg *network.NetworkingConfig
	if spec.Network.Name != "" {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			spec.Network.Name: {Aliases: spec.Network.Aliases},
		}}
	}
	return cfg, host, netCfg
}

func networkMode(a NetworkAttachment) string {
	if a.Name == "" {
		return string(container.NetworkMode("none"))
	}
	return a.Name
}

func envList(env []EnvVar) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		out = append(out, e.Name+"="+e.Value)
	}
	return out
}

// mounts are typed volume and tmpfs mounts only: the bind type is never produced, so no host path (and no
// Docker socket) can enter a container.
func mounts(spec ContainerSpec) []mount.Mount {
	var out []mount.Mount
	for _, m := range spec.Mounts {
		out = append(out, mount.Mount{
			Type: mount.TypeVolume, Source: m.Volume, Target: m.Target, ReadOnly: m.ReadOnly,
			// Copying the image's files into the workspace would make its content depend on the image.
			VolumeOptions: &mount.VolumeOptions{NoCopy: true},
		})
	}
	for _, t := range spec.Tmpfs {
		out = append(out, mount.Mount{
			Type: mount.TypeTmpfs, Target: t.Target,
			TmpfsOptions: &mount.TmpfsOptions{SizeBytes: t.SizeBytes},
		})
	}
	return out
}
