package sandbox

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/imagepuller"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
)

// privateImage is held by a registry that takes the credentials of its two users, teams A and B.
const privateImage = "registry.example:5000/team/secret:1"

var (
	teamA  = dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "team-a", Password: "a-pw"}
	teamB  = dd.RegistryAuth{ServerAddress: "https://registry.example:5000/v2/", Username: "team-b", Password: "b-pw"}
	nobody = dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "team-b", Password: "guess"}
)

// regcred is testNS's kubernetes.io/dockerconfigjson Secret "regcred" with credentials auth.
func regcred(t *testing.T, auth dd.RegistryAuth) *corev1.Secret {
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{
		auth.ServerAddress: map[string]string{"username": auth.Username, "password": auth.Password},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}
}

func withPullSecret(sbx *dsv1alpha1.Sandbox) {
	sbx.Spec.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "regcred"}
}

// pulledByTeamA makes the node hold privateImage the way another namespace's start would leave it: pulled
// through the agent's puller with team A's credentials.
func pulledByTeamA(t *testing.T, h *harness) {
	h.docker.AddRegistryImage(privateImage, fake.RegistryImage{Info: dd.ImageInfo{ID: "sha256:5ec7e7"}, Auth: &teamA, OtherAuth: []dd.RegistryAuth{teamB}})
	h.r.Images.Pull(imagepuller.Request{Ref: privateImage, Auth: &teamA, Waiter: types.NamespacedName{Namespace: "team-a", Name: "first"},
		Start: "uid-first/1", Until: time.Now().Add(time.Minute)})
	waitPulled(t, h)
	recorder.Drain(h.events)
}

func waitPulled(t *testing.T, h *harness) {
	select {
	case <-h.pulled:
	case <-time.After(time.Minute):
		t.Fatal("the pull never ended")
	}
}

// TestEnsureImagesVerifiesCredentialsForAnImageOthersPulled: an image another namespace pulled with its
// credentials is used once the registry took this namespace's own, by a pull with them, and never without.
func TestEnsureImagesVerifiesCredentialsForAnImageOthersPulled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sbx     *dsv1alpha1.Sandbox
		objects []client.Object
		verdict string // what the registry said, in the refusal's message; "": it took them
	}{
		{
			name:    "no imagePullSecret: refused",
			sbx:     newSandbox("s", withImage(privateImage, "")),
			verdict: "refused a pull without credentials (no imagePullSecret) (the registry refused the credentials)",
		},
		{
			name:    "wrong credentials: refused",
			sbx:     newSandbox("s", withImage(privateImage, ""), withPullSecret),
			objects: []client.Object{regcred(t, nobody)},
			verdict: `refused a pull with imagePullSecret "regcred" (the registry refused the credentials)`,
		},
		{
			name: "a service's image, with its own imagePullSecret's wrong credentials: refused",
			sbx:  newSandbox("s", withServices("db")),
			objects: []client.Object{regcred(t, nobody), newService("db", func(svc *dsv1alpha1.SandboxService) {
				svc.Spec.Image = privateImage
				svc.Spec.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "regcred"}
			})},
			verdict: `image registry.example:5000/team/secret:1 of service db is present on node node-a`,
		},
		{
			name:    "its own valid credentials: verified, and the start goes on",
			sbx:     newSandbox("s", withImage(privateImage, ""), withPullSecret),
			objects: []client.Object{regcred(t, teamB)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var svcs []*dsv1alpha1.SandboxService
			for _, o := range tc.objects {
				if svc, ok := o.(*dsv1alpha1.SandboxService); ok {
					svcs = append(svcs, svc)
				}
			}
			sbx := atTopology(tc.sbx, 1, svcs...)
			h := newHarness(t, append([]client.Object{sbx.DeepCopy()}, tc.objects...)...)
			pulledByTeamA(t, h)

			s, stop, err := h.imagesPass(sbx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stop).To(BeTrue())
			g.Expect(outcomeOf(s).reason).To(Equal(dsv1alpha1.ReasonImagePulling))
			g.Expect(outcomeOf(s).message).To(ContainSubstring("verifying with its registry the credentials of this namespace for image " + privateImage))
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Normal " + EventPulling}))
			waitPulled(t, h)

			s, stop, err = h.imagesPass(sbx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.docker.Calls(fake.OpPullImage)).To(Equal(2), "team A's pull and this namespace's")
			if tc.verdict == "" {
				g.Expect(stop).To(BeFalse())
				g.Expect(outcomeOf(s).reason).To(Equal(building.reason))
				g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Normal " + EventPulled}))
				_, stop, _ = h.imagesPass(sbx)
				g.Expect(stop).To(BeFalse(), "verified for good: a later start needs no pull")
				g.Expect(h.docker.Calls(fake.OpPullImage)).To(Equal(2))
				return
			}
			g.Expect(stop).To(BeTrue())
			g.Expect(outcomeOf(s).message).To(ContainSubstring("present on node node-a but this namespace's credentials were not verified for it"))
			g.Expect(outcomeOf(s).message).To(ContainSubstring(tc.verdict))
			g.Expect(outcomeOf(s).message).NotTo(ContainSubstring("guess"))
			got := outcomeOf(s)
			got.message = ""
			g.Expect(got).To(Equal(outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImagePullCredentialsRequired}))
			g.Expect(s.recheck).To(Equal(specRetry), "a fixed imagePullSecret is tried")
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Warning " + EventPullFailed}))

			s, stop, _ = h.imagesPass(sbx)
			g.Expect(stop).To(BeTrue())
			g.Expect(outcomeOf(s).reason).To(Equal(dsv1alpha1.ReasonImagePullCredentialsRequired))
			g.Expect(h.docker.Calls(fake.OpPullImage)).To(Equal(2), "the same credentials are not tried again")
			g.Expect(recorder.Drain(h.events)).To(BeEmpty(), "no news")
		})
	}
}

func TestEnsureImagesWithCredentialsOthersPulledWith(t *testing.T) {
	pulled := func(h *harness, s *scope) { pulledByTeamA(t, h) }
	runStepCases(t, (*Reconciler).ensureImages, []stepCase{
		{
			name:    "the very credentials that pulled it: used without a pull",
			sbx:     atTopology(newSandbox("s", withImage(privateImage, ""), withPullSecret), 1),
			objects: []client.Object{regcred(t, teamA)},
			docker:  pulled,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.docker.Calls(fake.OpPullImage)).To(Equal(1), "team A's alone")
			},
		},
		{
			name:    "pull policy Never and credentials not verified: refused, never pulled",
			sbx:     atTopology(newSandbox("s", withImage(privateImage, dsv1alpha1.PullNever)), 1),
			docker:  pulled,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImagePullCredentialsRequired},
			message: "credentials were not verified for it, and imagePullPolicy Never forbids asking its registry",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.docker.Calls(fake.OpPullImage)).To(Equal(1), "team A's alone")
				g.Expect(s.recheck).To(Equal(specRetry))
			},
		},
		{
			name:    "pull policy Never with the credentials that pulled it",
			sbx:     atTopology(newSandbox("s", withImage(privateImage, dsv1alpha1.PullNever), withPullSecret), 1),
			objects: []client.Object{regcred(t, teamA)},
			docker:  pulled,
		},
		{
			name: "the same content present under a name of the node's own is the node's",
			sbx:  atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) {
				pulledByTeamA(t, h)
				h.docker.AddImage(testImage, dd.ImageInfo{ID: "sha256:5ec7e7"})
			},
		},
	}, (*Reconciler).trackStartup)
}
