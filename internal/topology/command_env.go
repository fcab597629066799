package topology

import (
	"slices"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// CommandEnv is the environment a command run in a session gets on top of its container's: the Sandbox's
// commandEnv (a claim's env, docs/pools.md), then the command's own, which wins over a variable of the same
// name. Each name is passed once: Docker appends an exec's new names without replacing duplicates, and
// programs disagree on which of two copies they read.
func CommandEnv(sandbox, command []dsv1alpha1.ExecutionEnvVar) []dd.EnvVar {
	var out []dd.EnvVar
	for _, e := range slices.Concat(sandbox, command) {
		if i := slices.IndexFunc(out, func(o dd.EnvVar) bool { return o.Name == e.Name }); i >= 0 {
			out[i].Value = e.Value
			continue
		}
		out = append(out, dd.EnvVar{Name: e.Name, Value: e.Value})
	}
	return out
}
