package agent

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dockside-dev/dockside/internal/checkpointregistry"
)

// checkpointRegistry opens the repository Checkpoint archives are pushed to and pulled from, with the
// credentials of the kubernetes.io/dockerconfigjson Secret named namespace/name, if any. The Secret is read
// once, at startup: new credentials take an agent restart. nil when no registry is set.
func checkpointRegistry(ctx context.Context, reader client.Reader, opts Options) (*checkpointregistry.Registry, error) {
	if opts.CheckpointRegistry == "" {
		return nil, nil
	}
	o := checkpointregistry.Options{PlainHTTP: opts.CheckpointRegistryPlainHTTP}
	if opts.CheckpointRegistrySecret != "" {
		ns, name, ok := strings.Cut(opts.CheckpointRegistrySecret, "/")
		if !ok || ns == "" || name == "" {
			return nil, fmt.Errorf("the checkpoint registry's Secret must be named namespace/name, not %q", opts.CheckpointRegistrySecret)
		}
		var secret corev1.Secret
		if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &secret); err != nil {
			return nil, fmt.Errorf("reading the checkpoint registry's Secret %s: %w", opts.CheckpointRegistrySecret, err)
		}
		if secret.Type != corev1.SecretTypeDockerConfigJson {
			return nil, fmt.Errorf("the checkpoint registry's Secret %s is of type %s, not %s", opts.CheckpointRegistrySecret, secret.Type, corev1.SecretTypeDockerConfigJson)
		}
		auth, err := checkpointregistry.AuthFromDockerConfig(secret.Data[corev1.DockerConfigJsonKey], opts.CheckpointRegistry)
		if err != nil {
			return nil, fmt.Errorf("the checkpoint registry's Secret %s: %w", opts.CheckpointRegistrySecret, err)
		}
		o.Auth = auth
	}
	registry, err := checkpointregistry.New(opts.CheckpointRegistry, o)
	if err != nil {
		return nil, fmt.Errorf("setting up the checkpoint registry: %w", err)
	}
	return registry, nil
}
