package agent

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestTheCheckpointRegistrySecretMustBeADockerConfigWithTheRegistry(t *testing.T) {
	secret := func(name string, typ corev1.SecretType, cfg string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name}, Type: typ,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(cfg)}}
	}
	good := `{"auths":{"127.0.0.1:5000":{"username":"agent","password":"p"}}}`
	reader := fake.NewClientBuilder().WithObjects(
		secret("good", corev1.SecretTypeDockerConfigJson, good),
		secret("opaque", corev1.SecretTypeOpaque, good),
		secret("other-host", corev1.SecretTypeDockerConfigJson, `{"auths":{"127.0.0.2:5000":{"username":"a","password":"p"}}}`),
	).Build()
	base := Options{CheckpointRegistry: "127.0.0.1:5000/ckpt", CheckpointRegistryPlainHTTP: true}
	for name, want := range map[string]string{
		"ops/good":       "",
		"ops/opaque":     "is of type Opaque",
		"ops/other-host": "no credentials for 127.0.0.1:5000",
		"ops/missing":    "not found",
		"no-namespace":   "namespace/name",
	} {
		o := base
		o.CheckpointRegistrySecret = name
		r, err := checkpointRegistry(context.Background(), reader, o)
		switch {
		case want == "" && (err != nil || r == nil):
			t.Errorf("%s: %v", name, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want one saying %q", name, err, want)
		}
	}
	if r, err := checkpointRegistry(context.Background(), reader, Options{}); r != nil || err != nil {
		t.Errorf("no registry set: %v, %v", r, err)
	}
}
