package dockerdriver

import "fmt"

// initVersionUnknown is what docker info gives as the init's commit when running it with --version failed
// (the binary is missing) or printed something the daemon could not read.
const initVersionUnknown = "N/A"

// InitInfo is the daemon's init binary (dockerd --init-path; docker-init, which is tini, by default), as
// docker info reports it: the process that ContainerSpec.Init puts at a container's PID 1.
type InitInfo struct {
	Binary string // docker info's InitBinary; empty when the daemon names none
	// Commit is docker info's InitCommit.ID: the init's git commit, empty when its version names none (as
	// Debian's tini), initVersionUnknown when the daemon could not run it.
	Commit string
}

// Available tells whether containers can run under the daemon's init, and when they cannot, says why in
// words naming the binary. The daemon runs the binary with --version for docker info, so one it could not
// run is missing or broken, and a container asking for it would fail to start.
func (i InitInfo) Available() (bool, string) {
	switch {
	case i.Binary == "":
		return false, "the Docker daemon names no init binary (docker info: Init Binary)"
	case i.Commit == initVersionUnknown:
		return false, fmt.Sprintf("the Docker daemon could not run its init binary %q (docker info: init version N/A); install tini as docker-init or set dockerd's --init-path", i.Binary)
	}
	return true, ""
}
