package sandbox

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

func TestPullAuthReadsTheRegistrysEntry(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	cfg, _ := json.Marshal(map[string]any{"auths": map[string]any{
		"https://index.docker.io/v1/": map[string]string{"auth": "aHViOmh1Yi1wdw=="}, // hub:hub-pw
		"registry.example:5000":       map[string]string{"username": "robot", "password": "pw"},
	}})
	secrets := []runtime.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "opaque"}, Data: map[string][]byte{"x": []byte("y")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "garbled"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte("{not json")}},
	}
	r := &Reconciler{APIReader: fake.NewClientBuilder().WithScheme(scheme).WithRuntimeObjects(secrets...).Build()}
	auth := func(secret, image string) (*dd.RegistryAuth, error) {
		return r.pullAuth(context.Background(), "ns", &dsv1alpha1.LocalObjectReference{Name: secret}, image)
	}

	a, err := auth("regcred", "team/tool:1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*a).To(Equal(dd.RegistryAuth{ServerAddress: "https://index.docker.io/v1/", Username: "hub", Password: "hub-pw"}))
	a, err = auth("regcred", "registry.example:5000/team/secret:1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Username).To(Equal("robot"))
	a, err = auth("regcred", "other.example/tool:1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(BeNil(), "no entry for the registry: anonymous")

	_, err = auth("absent", "team/tool:1")
	g.Expect(err).To(MatchError(`imagePullSecret "absent" does not exist`))
	_, err = auth("opaque", "team/tool:1")
	g.Expect(err).To(MatchError(ContainSubstring("is not of type kubernetes.io/dockerconfigjson")))
	_, err = auth("garbled", "team/tool:1")
	g.Expect(err).To(MatchError(ContainSubstring("does not hold a readable .dockerconfigjson")))
}

func TestDigestMatches(t *testing.T) {
	g := NewWithT(t)
	pinned := "reg.example/tool@sha256:aa"
	g.Expect(digestMatches("reg.example/tool:1", "sha256:bb", nil)).To(BeTrue(), "unpinned")
	g.Expect(digestMatches(pinned, "sha256:aa", nil)).To(BeTrue())
	g.Expect(digestMatches(pinned, "sha256:bb", []string{"reg.example/tool@sha256:aa"})).To(BeFalse(), "the pull's own report wins")
	g.Expect(digestMatches(pinned, "", []string{"reg.example/tool@sha256:aa"})).To(BeTrue())
	g.Expect(digestMatches(pinned, "", nil)).To(BeFalse(), "unverifiable")
}

func TestScratchRollsTheTopologyButPullSettingsDoNot(t *testing.T) {
	g := NewWithT(t)
	base := dsv1alpha1.SandboxSpec{Image: "img:1"}
	hash := func(spec dsv1alpha1.SandboxSpec) string { return topology.Hash(&spec, nil, nil) }
	h := hash(base)

	changed := base
	changed.ImagePullPolicy, changed.StartupDeadlineSeconds = dsv1alpha1.PullAlways, 30
	changed.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "regcred"}
	g.Expect(hash(changed)).To(Equal(h), "they matter only at the next start")
	changed = base
	changed.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/data", Size: resource.MustParse("8Mi")}}
	g.Expect(hash(changed)).NotTo(Equal(h))
	g.Expect(topology.ScratchMounts(changed.Scratch)).To(Equal([]dd.TmpfsMount{{Target: "/data", SizeBytes: 8 << 20}}))
}

func TestPinned(t *testing.T) {
	g := NewWithT(t)
	g.Expect(pinned("img@sha256:abc")).To(BeTrue())
	g.Expect(pinned("img:1")).To(BeFalse())
}
