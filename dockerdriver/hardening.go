package dockerdriver

import (
	"strconv"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
)

// logLimits bound what Docker keeps of a container's output on disk, so untrusted output cannot fill it.
var logLimits = map[string]string{"max-size": "10m", "max-file": "1"}

// ipv6Off switches IPv6 off inside the container's network namespace: Dockside's bridges are IPv4 only, and
// without an address of its own a container would still have a link-local one (fe80::/10) to reach its
// neighbours with (docs/egress.md).
var ipv6Off = map[string]string{"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}

// noUpstreamDNS is the resolver of a container on an internal network (None and Isolated): its own loopback.
// Docker's embedded resolver still answers the names of the network's containers, and forwards every other
// query to this address inside the container's own network namespace, where no resolver of the host is.
// Without it, Docker before 23.0.11 / 25.0.4 would forward them through the host's resolver when that is on
// loopback (CVE-2024-29018); see docs/egress.md, "DNS".
var noUpstreamDNS = []string{"127.0.0.1"}

// createRequest translates a validated spec into Docker's create request and adds the hardening every
// container gets. Nothing in ContainerSpec can switch any of it off. imageUser is the USER of the spec's
// image, which the container keeps only when it is not root (see RunAs).
func createRequest(node string, spec ContainerSpec, imageUser string) (*container.Config, *container.HostConfig, *network.NetworkingConfig) {
	cfg := &container.Config{
		Image:      spec.Image,
		Entrypoint: spec.Entrypoint,
		Cmd:        spec.Cmd,
		Env:        envList(spec.Env),
		WorkingDir: spec.WorkingDir,
		User:       RunAs(spec, imageUser),
		Hostname:   spec.Hostname,
		OpenStdin:  spec.KeepStdinOpen,
		Tty:        spec.KeepStdinOpen, // see KeepStdinOpen: a terminal, not a pipe, so no command can be fed to PID 1
		Labels:     Labels(node, spec.Owner, spec.Role, spec.Service),
		// The image's own health check would run commands the controllers did not ask for.
		Healthcheck: &container.HealthConfig{Test: []string{"NONE"}},
	}
	pids := hostPidsLimit(spec.Runtime, spec.Resources.PIDs)
	host := &container.HostConfig{
		NetworkMode: container.NetworkMode(networkMode(spec.Network)),
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true"},
		Privileged:  false,
		IpcMode:     container.IPCModePrivate,
		Sysctls:     ipv6Off,
		Mounts:      mounts(spec),
		LogConfig:   container.LogConfig{Type: "json-file", Config: logLimits},
		Resources: container.Resources{
			Memory:     spec.Resources.MemoryBytes,
			MemorySwap: spec.Resources.MemoryBytes, // equal to Memory: no swap on top
			NanoCPUs:   spec.Resources.NanoCPUs,
			PidsLimit:  &pids,
			Ulimits:    ulimits(),
		},
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
		Init:          withInit(spec.Init),
		Runtime:       spec.Runtime,

		// Writes go to the mounts, each capped and counted, unless a capped writable layer was asked for.
		ReadonlyRootfs: spec.WritableRootBytes == 0,
		StorageOpt:     writableLayer(spec),
	}
	var netCfg *network.NetworkingConfig
	if spec.Network.Name != "" {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			spec.Network.Name: {Aliases: spec.Network.Aliases},
		}}
	}
	return cfg, host, netCfg
}

// withInit asks for the daemon's init when the spec does, and otherwise leaves the daemon's default.
func withInit(on bool) *bool {
	if !on {
		return nil
	}
	return &on
}

// writableLayer is the storage option capping a writable root file system's layer on the node's disk.
func writableLayer(spec ContainerSpec) map[string]string {
	if spec.WritableRootBytes <= 0 {
		return nil
	}
	return map[string]string{"size": strconv.FormatInt(spec.WritableRootBytes, 10)}
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
