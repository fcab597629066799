package sandbox

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/imagepuller"
)

// missingPullSecretError says which imagePullSecret is missing; invalidPullSecretError why one is unusable.
// Neither names a value.
type missingPullSecretError struct{ name string }

func (e *missingPullSecretError) Error() string {
	return fmt.Sprintf("imagePullSecret %q does not exist", e.name)
}

type invalidPullSecretError struct{ name, why string }

func (e *invalidPullSecretError) Error() string {
	return fmt.Sprintf("imagePullSecret %q %s", e.name, e.why)
}

// dockerConfig is the part of a .dockerconfigjson the agent reads.
type dockerConfig struct {
	Auths map[string]struct {
		Username      string `json:"username"`
		Password      string `json:"password"`
		Auth          string `json:"auth"` // base64 of username:password
		IdentityToken string `json:"identitytoken"`
	} `json:"auths"`
}

// pullAuth reads the credentials for image's registry from the kubernetes.io/dockerconfigjson Secret ref
// names (nil: none), straight from the API server like env Secrets, so that the agent keeps no copy of
// Secrets. A Secret without an entry for that registry means an anonymous pull, as in Kubernetes.
func (r *Reconciler) pullAuth(ctx context.Context, namespace string, ref *dsv1alpha1.LocalObjectReference, image string) (*dd.RegistryAuth, error) {
	if ref == nil {
		return nil, nil
	}
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, &missingPullSecretError{name: ref.Name}
	case err != nil:
		return nil, fmt.Errorf("reading the pull Secret %s: %w", ref.Name, err)
	case secret.Type != corev1.SecretTypeDockerConfigJson:
		return nil, &invalidPullSecretError{name: ref.Name, why: "is not of type " + string(corev1.SecretTypeDockerConfigJson)}
	}
	var cfg dockerConfig
	if err := json.Unmarshal(secret.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
		return nil, &invalidPullSecretError{name: ref.Name, why: "does not hold a readable " + corev1.DockerConfigJsonKey}
	}
	registry := imagepuller.Registry(image)
	for server, entry := range cfg.Auths {
		if imagepuller.RegistryHost(server) != registry {
			continue
		}
		auth := &dd.RegistryAuth{ServerAddress: server, Username: entry.Username, Password: entry.Password, IdentityToken: entry.IdentityToken}
		if auth.Username == "" && entry.Auth != "" {
			pair, err := base64.StdEncoding.DecodeString(entry.Auth)
			user, pass, ok := strings.Cut(string(pair), ":")
			if err != nil || !ok {
				return nil, &invalidPullSecretError{name: ref.Name, why: "has an auth entry that is not base64 of user:password"}
			}
			auth.Username, auth.Password = user, pass
		}
		return auth, nil
	}
	return nil, nil
}
