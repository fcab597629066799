package dockerdriver

import (
	"net/netip"
	"path"
	"regexp"
	"strings"
)

// Docker refuses memory limits under 6 MiB; refusing them here gives a clearer error.
const minMemoryBytes = 6 << 20

// Docker's own name rule for containers, networks and volumes.
var dockerName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)

// Validate refuses what cannot become a hardened container, as an InvalidSpec error. Messages name fields,
// never values (which may be secrets).
func (spec ContainerSpec) Validate() error {
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
		if underKernelFS(t) {
			return bad("mount target %q is under /proc, /sys or /dev", t)
		}
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

// kernelFS are where the runtime mounts the kernel's own file systems (proc, sysfs, devices); a mount over
// any of them, or inside one, would hide or replace what the kernel and Docker put there.
var kernelFS = []string{"/proc", "/sys", "/dev"}

// underKernelFS tells whether target is one of kernelFS or below one, judged on its clean form: '/./dev',
// '//proc', '/sys/' or '/a/../proc' are the paths Docker would mount, so they are refused here whatever
// spelling reached the driver (the CRDs admit only clean paths, but objects admitted before may not be).
func underKernelFS(target string) bool {
	clean := path.Clean("/" + target)
	for _, root := range kernelFS {
		if clean == root || strings.HasPrefix(clean, root+"/") {
			return true
		}
	}
	return false
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

// UncoveredVolumes lists the image's declared VOLUMEs that no mount of the spec covers. Docker would back
// each with an anonymous volume on the host's disk, unbounded and outliving the container, so they are
// refused unless the spec mounts something of its own there.
func (spec ContainerSpec) UncoveredVolumes(imageVolumes []string) []string {
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

// Validate refuses a network spec Docker could not create as asked, as an InvalidSpec error.
// bridgeName is a host interface name Dockside may give a bridge: its prefix, at most 15 characters.
var bridgeName = regexp.MustCompile(`^` + BridgePrefix + `[a-z0-9-]{1,13}$`)

func (spec NetworkSpec) Validate() error {
	bad := func(reason string) error { return NewError(KindInvalidSpec, PhaseNetwork, spec.Name, reason) }
	if !dockerName.MatchString(spec.Name) {
		return bad("the network name is not a valid Docker name")
	}
	if spec.Bridge != "" && !bridgeName.MatchString(spec.Bridge) {
		return bad("the bridge name is not a Dockside interface name")
	}
	if spec.Subnet == "" {
		if spec.Gateway != "" {
			return bad("a gateway needs a subnet")
		}
		return nil
	}
	prefix, err := netip.ParsePrefix(spec.Subnet)
	if err != nil || prefix.Masked() != prefix {
		return bad("the subnet is not a CIDR network address")
	}
	if spec.Gateway != "" {
		gw, err := netip.ParseAddr(spec.Gateway)
		if err != nil || !prefix.Contains(gw) {
			return bad("the gateway is not an address inside the subnet")
		}
	}
	return nil
}

// Validate refuses a volume without a valid name, role or size limit, as an InvalidSpec error.
func (spec VolumeSpec) Validate() error {
	switch {
	case !dockerName.MatchString(spec.Name):
		return NewError(KindInvalidSpec, PhaseVolume, spec.Name, "the volume name is not a valid Docker name")
	case spec.Role == "":
		return NewError(KindInvalidSpec, PhaseVolume, spec.Name, "a role is required")
	case spec.Supervisor != "" && spec.SizeBytes != 0:
		return NewError(KindInvalidSpec, PhaseVolume, spec.Name, "a supervisor volume is on disk and takes no size limit")
	case spec.Supervisor == "" && spec.SizeBytes <= 0:
		return NewError(KindInvalidSpec, PhaseVolume, spec.Name, "a size limit is required")
	}
	return nil
}

// runKey is what a supervised run's folder may be named.
var runKey = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// Validate refuses an exec without command, deadline or output cap; name is the container, for the error.
func (req ExecRequest) Validate(name string) error {
	bad := func(reason string) error { return NewError(KindInvalidSpec, PhaseExec, name, reason) }
	switch {
	case len(req.Command) == 0:
		return bad("a command is required")
	case req.Timeout <= 0:
		return bad("a timeout is required")
	case req.OutputLimit <= 0:
		return bad("an output limit is required")
	case req.KeepOnTimeout && req.KillSurvivors:
		return bad("KeepOnTimeout and KillSurvivors exclude each other")
	case req.Supervised != nil && (req.KeepOnTimeout || req.Supervised.Created == nil || !runKey.MatchString(req.Supervised.Key)):
		return bad("a supervised exec needs a key of letters, digits and '-', a Created callback and no KeepOnTimeout")
	case req.Supervised != nil && len(req.Stdin) > MaxSupervisedStdin:
		return errorf(KindInvalidSpec, PhaseExec, name, "a supervised exec takes at most %d bytes of stdin", MaxSupervisedStdin)
	}
	for i, e := range req.Env {
		if e.Name == "" {
			return errorf(KindInvalidSpec, PhaseExec, name, "environment variable %d has no name", i)
		}
	}
	return nil
}
