package owndockerd

import (
	"encoding/json"
	"os/exec"
)

// GVisorRuntime is the name an own daemon started by StartGVisor knows runsc by: the agent's default
// --gvisor-runtime-name.
const GVisorRuntime = "runsc"

// gvisorArgs are runsc's flags on this machine, which has no KVM: the ptrace platform, and the network of the
// container's own namespace (hostinet) rather than gVisor's own stack, whose set-up runsc refuses here ("cannot
// run with network enabled in root network namespace"); docs/security.md, "What gVisor adds", says what that
// costs.
var gvisorArgs = []string{"--platform=ptrace", "--network=host"}

// GVisorInstalled finds runsc (Debian's package runsc): the path the daemon runs, or why there is none.
func GVisorInstalled() (string, error) {
	return exec.LookPath("runsc") //nolint:wrapcheck // exec's error names runsc and the PATH
}

// config is the daemon's daemon.json: empty, or registering runsc.
func (d *Daemon) config() []byte {
	if !d.GVisor {
		return []byte("{}\n")
	}
	path, err := GVisorInstalled()
	if err != nil {
		path = "runsc" // the daemon then says it cannot find it, when a container asks for it
	}
	data, _ := json.Marshal(map[string]any{"runtimes": map[string]any{ // maps of strings: it cannot fail
		GVisorRuntime: map[string]any{"path": path, "runtimeArgs": gvisorArgs},
	}})
	return append(data, '\n')
}
