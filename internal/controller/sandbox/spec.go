package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Limits where a field was left out (the CRD defaults them, so this only covers objects made before).
const (
	defaultCPU       = 1_000_000_000 // nano CPUs: one core
	defaultMemory    = 512 << 20
	defaultPids      = 256
	defaultMountPath = "/workspace"
)

// holderLimits are the holder's: it only sleeps while it keeps the workspace mounted. Its CPU limit is a
// whole CPU all the same, because runc starts the container inside the container's own cgroup: at 10m the
// start alone took over 3 s on a busy host (1.2 s on a quiet one, against 0.27 s at one CPU), on every
// Sandbox's critical path. A sleeping process uses none of it, and no user code runs in the holder.
var holderLimits = dd.Resources{MemoryBytes: 8 << 20, NanoCPUs: 1_000_000_000, PIDs: 16}

// resolveSpec reads the SandboxServices the spec names and hashes what the topology would be built from.
// A missing SandboxService is noted, not failed: whether it matters depends on the topology's state.
func (r *SandboxReconciler) resolveSpec(ctx context.Context, s *scope) (bool, error) {
	s.services = make([]*dsv1alpha1.SandboxService, len(s.sbx.Spec.Services))
	for i, name := range s.sbx.Spec.Services {
		svc := &dsv1alpha1.SandboxService{}
		err := r.Get(ctx, types.NamespacedName{Namespace: s.sbx.Namespace, Name: name}, svc)
		switch {
		case apierrors.IsNotFound(err):
			if s.missing == "" {
				s.missing = name
			}
		case err != nil:
			return s.fail(dsv1alpha1.ReasonServiceNotFound, "reading SandboxService "+name, err)
		default:
			s.services[i] = svc
		}
	}
	s.hash = topologyHash(&s.sbx.Spec, s.sbx.Spec.Services, s.services)
	s.resolved = true
	return false, nil
}

// topologyHash digests what a topology is built from, as "<spec>-<services>": the Sandbox's own fields that
// roll it, then the identity of each SandboxService it names. A SandboxService's generation is left out on
// purpose: a change to a SandboxService must not disrupt the Sandboxes running it (they report
// ServicesUpToDate=False and pick it up at their next roll), and its deletion, which bumps the generation,
// must not roll them either. The halves are kept apart because a settled topology (finished run, poisoned)
// rolls only for a change of the Sandbox's own spec. What it covers must stay stable across agent versions:
// a change rolls every running topology on upgrade.
func topologyHash(spec *dsv1alpha1.SandboxSpec, names []string, services []*dsv1alpha1.SandboxService) string {
	own, _ := json.Marshal(struct {
		Image, WorkingDir, CPU, Memory, Network, MountPath string
		Command, Args, Services                            []string
		Env                                                []dsv1alpha1.EnvVar
		Pids                                               int64
		Scratch                                            []dsv1alpha1.ScratchMount `json:",omitempty"` // so that hashes before it stay
		WritableRoot                                       int64                     `json:",omitempty"` // omitted when unset, like Scratch
		RunAsRoot                                          bool                      `json:",omitempty"`
		SecretFiles                                        []dsv1alpha1.SecretFile   `json:",omitempty"`
	}{
		spec.Image, spec.WorkingDir, spec.Resources.CPU.String(), spec.Resources.Memory.String(),
		string(spec.Network.Mode), mountPath(spec.Workspace), spec.Command, spec.Args, spec.Services, spec.Env,
		spec.Resources.Pids, spec.Scratch, writableRootBytes(*spec), spec.RunAsRoot, spec.SecretFiles,
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

// ownSpecPart is the half of a topology hash that covers the Sandbox's own spec.
func ownSpecPart(hash string) string {
	own, _, _ := strings.Cut(hash, "-")
	return own
}

// primarySpec is the primary container; Env holds the agent's defaults, to which create adds the spec's.
func (r *SandboxReconciler) primarySpec(s *scope) dd.ContainerSpec {
	spec := s.sbx.Spec
	res := limits(spec.Resources)
	return dd.ContainerSpec{
		Name: s.primaryName(), Owner: s.names().Owner(), Role: dsv1alpha1.RolePrimary,
		Image: spec.Image, Entrypoint: spec.Command, Cmd: spec.Args, WorkingDir: spec.WorkingDir,
		Env:      append(primaryHome(spec), egressEnv(s, topologyNames(s))...),
		Hostname: s.sbx.Name, Resources: res, Network: s.attachment,
		Mounts:    append([]dd.VolumeMount{{Volume: s.volumeName(), Target: mountPath(spec.Workspace)}}, secretFilesMounts(s)...),
		Tmpfs:     primaryTmpfs(spec),
		RunAsRoot: spec.RunAsRoot, WritableRootBytes: writableRootBytes(spec),
		// A session runs the image's own command (a shell, a REPL) until deleted: without input held open it
		// would read end-of-file and exit at once.
		KeepStdinOpen: len(spec.Command) == 0,
	}
}

// serviceSpec is a service container; Env holds the agent's defaults, to which create adds the spec's.
func (r *SandboxReconciler) serviceSpec(s *scope, svc *dsv1alpha1.SandboxService) dd.ContainerSpec {
	res := limits(svc.Spec.Resources)
	return dd.ContainerSpec{
		Name: s.serviceName(svc.Name), Owner: s.names().Owner(), Role: dsv1alpha1.RoleService, Service: svc.Name,
		Image: svc.Spec.Image, Entrypoint: svc.Spec.Command, Cmd: svc.Spec.Args, Hostname: svc.Name,
		Env:       append(serviceHome(), egressEnv(s, topologyNames(s))...),
		Resources: res, Tmpfs: withTmp(scratchMounts(svc.Spec.Scratch), res.MemoryBytes), RunAsRoot: svc.Spec.RunAsRoot,
		Network: dd.NetworkAttachment{Name: s.networkName(), Aliases: append([]string{svc.Name}, svc.Spec.Aliases...)},
	}
}

func (r *SandboxReconciler) holderSpec(s *scope) dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: s.holderName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleHolder, Image: r.Options.HolderImage,
		Resources: holderLimits, Mounts: []dd.VolumeMount{{Volume: s.volumeName(), Target: HolderMountPath}},
	}
}

func limits(res dsv1alpha1.Resources) dd.Resources {
	out := dd.Resources{MemoryBytes: res.Memory.Value(), NanoCPUs: res.CPU.MilliValue() * 1_000_000, PIDs: res.Pids}
	if out.MemoryBytes == 0 {
		out.MemoryBytes = defaultMemory
	}
	if out.NanoCPUs == 0 {
		out.NanoCPUs = defaultCPU
	}
	if out.PIDs == 0 {
		out.PIDs = defaultPids
	}
	return out
}

func mountPath(w dsv1alpha1.Workspace) string {
	if w.MountPath == "" {
		return defaultMountPath
	}
	return path.Clean(w.MountPath)
}

func workspaceBytes(w dsv1alpha1.Workspace) int64 {
	if n := w.Size.Value(); n > 0 {
		return n
	}
	return 512 << 20
}

// pinned tells whether an image reference names its content by digest.
func pinned(image string) bool { return strings.Contains(image, "@sha256:") }

// missingSecretError says which Secret key an env var needs; it names no value.
type missingSecretError struct{ name, key string }

func (e *missingSecretError) Error() string {
	return fmt.Sprintf("key %q of Secret %q does not exist", e.key, e.name)
}

// resolveEnv turns env vars into values, reading Secrets straight from the API server (never cached, so
// the agent holds no copy of Secrets it does not use). Values are never logged or put in any object.
func (r *SandboxReconciler) resolveEnv(ctx context.Context, namespace string, env []dsv1alpha1.EnvVar) ([]dd.EnvVar, error) {
	secrets := map[string]*corev1.Secret{}
	out := make([]dd.EnvVar, 0, len(env))
	for _, e := range env {
		if e.ValueFrom == nil {
			out = append(out, dd.EnvVar{Name: e.Name, Value: e.Value})
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		secret, ok := secrets[ref.Name]
		if !ok {
			secret = &corev1.Secret{}
			err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, secret)
			if apierrors.IsNotFound(err) {
				return nil, &missingSecretError{name: ref.Name, key: ref.Key}
			}
			if err != nil {
				return nil, err
			}
			secrets[ref.Name] = secret
		}
		value, ok := secret.Data[ref.Key]
		if !ok {
			return nil, &missingSecretError{name: ref.Name, key: ref.Key}
		}
		out = append(out, dd.EnvVar{Name: e.Name, Value: string(value)})
	}
	return out, nil
}
