package sandbox

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// primarySpec is the primary container; Env holds the agent's defaults, to which create adds the spec's.
func (r *Reconciler) primarySpec(s *scope) dd.ContainerSpec {
	spec := s.sbx.Spec
	res := topology.Limits(spec.Resources)
	return dd.ContainerSpec{
		Name: s.primaryName(), Owner: s.names().Owner(), Role: dsv1alpha1.RolePrimary,
		Image: spec.Image, Entrypoint: spec.Command, Cmd: spec.Args, WorkingDir: spec.WorkingDir,
		Env:      append(primaryHome(spec), egressEnv(s, topologyNames(s))...),
		Hostname: s.sbx.Name, Resources: res, Network: s.attachment,
		Mounts: append(append([]dd.VolumeMount{{Volume: s.volumeName(), Target: topology.MountPath(spec.Workspace)}},
			secretFilesMounts(s)...), runVolumeMounts(s)...),
		Tmpfs:     topology.PrimaryTmpfs(spec),
		RunAsRoot: spec.RunAsRoot, WritableRootBytes: topology.WritableRootBytes(spec),
		// A session runs the image's own command (a shell, a REPL) until deleted: without input held open it
		// would read end-of-file and exit at once.
		KeepStdinOpen: len(spec.Command) == 0,
		// The data plane kills processes whose children then fall to PID 1; an init reaps them.
		Init:    r.Options.Init,
		Runtime: r.Options.Runtimes.Node().DockerName(spec.Runtime),
	}
}

// serviceSpec is a service container; Env holds the agent's defaults, to which create adds the spec's.
func (r *Reconciler) serviceSpec(s *scope, svc *dsv1alpha1.SandboxService) dd.ContainerSpec {
	res := topology.Limits(svc.Spec.Resources)
	return dd.ContainerSpec{
		Name: s.serviceName(svc.Name), Owner: s.names().Owner(), Role: dsv1alpha1.RoleService, Service: svc.Name,
		Image: svc.Spec.Image, Entrypoint: svc.Spec.Command, Cmd: svc.Spec.Args, Hostname: svc.Name,
		Env:       append(serviceHome(), egressEnv(s, topologyNames(s))...),
		Resources: res, Tmpfs: topology.WithTmp(topology.ScratchMounts(svc.Spec.Scratch), res.MemoryBytes), RunAsRoot: svc.Spec.RunAsRoot,
		Network: dd.NetworkAttachment{Name: s.networkName(), Aliases: append([]string{svc.Name}, svc.Spec.Aliases...)},
		Runtime: r.Options.Runtimes.Node().DockerName(svc.Spec.Runtime),
	}
}

func (r *Reconciler) holderSpec(s *scope) dd.ContainerSpec {
	return dd.ContainerSpec{
		Name: s.holderName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleHolder, Image: r.Options.HolderImage,
		Resources: topology.HolderLimits, Mounts: []dd.VolumeMount{{Volume: s.volumeName(), Target: topology.HolderMountPath}},
	}
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
func (r *Reconciler) resolveEnv(ctx context.Context, namespace string, env []dsv1alpha1.EnvVar) ([]dd.EnvVar, error) {
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
				return nil, fmt.Errorf("reading Secret %s: %w", ref.Name, err)
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
