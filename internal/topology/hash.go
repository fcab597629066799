package topology

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Hash digests what a topology is built from, as "<spec>-<services>": the Sandbox's own fields that roll it,
// then the identity of each SandboxService it names (services[i] is names[i]'s, nil when it is missing). A
// SandboxService's generation is left out on purpose: a change to a SandboxService must not disrupt the
// Sandboxes running it (they report ServicesUpToDate=False and pick it up at their next roll), and its
// deletion, which bumps the generation, must not roll them either. The halves are kept apart because a
// settled topology (finished run, poisoned) rolls only for a change of the Sandbox's own spec. What it covers
// must stay stable across agent versions: a change rolls every running topology on upgrade.
func Hash(spec *dsv1alpha1.SandboxSpec, names []string, services []*dsv1alpha1.SandboxService) string {
	own, _ := json.Marshal(struct {
		Image, WorkingDir, CPU, Memory, Network, MountPath string
		Command, Args, Services                            []string
		Env                                                []dsv1alpha1.EnvVar
		Pids                                               int64
		Scratch                                            []dsv1alpha1.ScratchMount `json:",omitempty"` // so that hashes before it stay
		WritableRoot                                       int64                     `json:",omitempty"` // omitted when unset, like Scratch
		RunAsRoot                                          bool                      `json:",omitempty"`
		SecretFiles                                        []dsv1alpha1.SecretFile   `json:",omitempty"`
		Runtime                                            dsv1alpha1.Runtime        `json:",omitempty"` // a change rolls onto the runtime asked
	}{
		spec.Image, spec.WorkingDir, spec.Resources.CPU.String(), spec.Resources.Memory.String(),
		string(spec.Network.Mode), MountPath(spec.Workspace), spec.Command, spec.Args, spec.Services, spec.Env,
		spec.Resources.Pids, spec.Scratch, WritableRootBytes(*spec), spec.RunAsRoot, spec.SecretFiles,
		spec.Runtime,
	})
	var svcs []string
	for i, name := range names {
		if services[i] == nil {
			svcs = append(svcs, name+":missing")
			continue
		}
		svcs = append(svcs, name+":"+string(services[i].UID))
	}
	return shortHash(own) + "-" + shortHash([]byte(strings.Join(svcs, ",")))
}

func shortHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// OwnSpecPart is the half of a topology hash that covers the Sandbox's own spec.
func OwnSpecPart(hash string) string {
	own, _, _ := strings.Cut(hash, "-")
	return own
}
