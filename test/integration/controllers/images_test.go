//go:build integration

package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// Images in these specs live only in the fake daemon and its fake registry: nothing is ever pulled for real.
const (
	remote   = "registry.example/team/tool:1"
	private  = "registry.example:5000/team/secret:1"
	volumed  = "dockside.dev/with-volume:local"
	pinnedAt = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// specDocker records the container specs the agent asked for, by role (the fake keeps them to itself).
type specDocker struct {
	*fake.Driver
	mu    sync.Mutex
	specs map[string]dd.ContainerSpec
}

func (d *specDocker) EnsureContainer(ctx context.Context, spec dd.ContainerSpec) (dd.ContainerInfo, error) {
	d.mu.Lock()
	d.specs[spec.Role+"/"+spec.Service] = spec
	d.mu.Unlock()
	return d.Driver.EnsureContainer(ctx, spec)
}

func (d *specDocker) spec(role, service string) dd.ContainerSpec {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.specs[role+"/"+service]
}

// pullSecret is a kubernetes.io/dockerconfigjson Secret with credentials for one registry.
func pullSecret(ns, name, server, user, password string) *corev1.Secret {
	GinkgoHelper()
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{server: map[string]string{"username": user, "password": password}}})
	Expect(err).NotTo(HaveOccurred())
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}
}

func deadlineOf(seconds int32) func(*dsv1alpha1.Sandbox) {
	return func(s *dsv1alpha1.Sandbox) { s.Spec.StartupDeadlineSeconds = seconds }
}

// session is a session on image in ns, bound to node, changed by each tweak.
func session(ns, name, node, image string, tweaks ...func(*dsv1alpha1.Sandbox)) *dsv1alpha1.Sandbox {
	sbx := sandbox(ns, name, node)
	sbx.Spec.Image = image
	for _, t := range tweaks {
		t(sbx)
	}
	return sbx
}

var _ = Describe("Image pull policy", func() {
	It("runs a present image with IfNotPresent without pulling", func() {
		ns, a := newNamespace(), newAgent()
		sbx := session(ns, "local", a.node, busybox)
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(get(sbx).Spec.ImagePullPolicy).To(Equal(dsv1alpha1.PullIfNotPresent), "the default")
		Expect(a.docker.Calls(fake.OpPullImage)).To(BeZero())
	})

	It("pulls a missing image in the background, reporting progress in the condition and in Events", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddRegistryImage(remote, fake.RegistryImage{Delay: 2 * time.Second})
		sbx := session(ns, "pulled", a.node, remote)
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReconciling)).Should(Equal("True/ImagePulling"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxStarting))
		Eventually(messageOf(sbx, dsv1alpha1.ConditionReconciling)).Should(MatchRegexp(`pulling image registry.example/team/tool:1 for the primary container: [1-3] of 4 layers`))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(a.docker.Calls(fake.OpPullImage)).To(Equal(1))
		Eventually(eventReasons(sbx)).Should(ContainElements("Pulling", "Pulled"))
	})

	It("makes one pull for every Sandbox needing the same image at once", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.Workers = 4 })
		a.docker.AddRegistryImage(remote, fake.RegistryImage{Delay: 1500 * time.Millisecond})
		var all []*dsv1alpha1.Sandbox
		for i := range 3 {
			sbx := session(ns, fmt.Sprintf("waiter-%d", i), a.node, remote)
			create(sbx)
			all = append(all, sbx)
		}
		Eventually(messageOf(all[0], dsv1alpha1.ConditionReady)).Should(ContainSubstring("one pull for 3 Sandboxes"))
		for _, sbx := range all {
			Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
			Eventually(eventReasons(sbx)).Should(ContainElement("Pulled"))
		}
		Expect(a.docker.Calls(fake.OpPullImage)).To(Equal(1))
	})

	It("pulls with Always even when the image is present, once per start", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddRegistryImage(busybox, fake.RegistryImage{})
		sbx := session(ns, "always", a.node, busybox, func(s *dsv1alpha1.Sandbox) { s.Spec.ImagePullPolicy = dsv1alpha1.PullAlways })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Consistently(func() int { return a.docker.Calls(fake.OpPullImage) }).Should(Equal(1))

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "ROLLED", Value: "1"}} })
		Eventually(func() int64 { return get(sbx).Status.TopologyGeneration }).Should(BeEquivalentTo(2))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(a.docker.Calls(fake.OpPullImage)).To(Equal(2), "the new start pulls again")
	})

	It("fails at once with Never when the image is missing, and starts once it is there", func() {
		ns, a := newNamespace(), newAgent()
		sbx := session(ns, "never", a.node, "dockside.dev/later:local", func(s *dsv1alpha1.Sandbox) { s.Spec.ImagePullPolicy = dsv1alpha1.PullNever })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImageNotPresent"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(message(sbx, dsv1alpha1.ConditionStalled)).To(ContainSubstring("Never"))
		Expect(a.docker.Calls(fake.OpPullImage)).To(BeZero())
		Expect(holdings(a.docker, string(get(sbx).UID))).To(BeZero(), "nothing is built before the images are there")

		a.docker.AddImage("dockside.dev/later:local", dd.ImageInfo{})
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("pulls a SandboxService's image with its own policy", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddRegistryImage(remote, fake.RegistryImage{})
		db := service(ns, "db")
		db.Spec.Image = remote
		create(db)
		sbx := session(ns, "with-db", a.node, busybox, func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(a.docker.Calls(fake.OpPullImage)).To(Equal(1))
		Eventually(eventReasons(sbx)).Should(ContainElement("Pulled"))
	})
})

var _ = Describe("Registry credentials", func() {
	creds := &dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "robot", Password: "s3cr3t-pw"}

	It("pulls with the credentials of a kubernetes.io/dockerconfigjson Secret, never showing them", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddRegistryImage(private, fake.RegistryImage{Auth: creds})
		sbx := session(ns, "private", a.node, private, func(s *dsv1alpha1.Sandbox) {
			s.Spec.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "regcred"}
		})
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/SecretNotFound"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring(`imagePullSecret "regcred" does not exist`))
		create(pullSecret(ns, "regcred", "https://registry.example:5000/v2/", "robot", "s3cr3t-pw"))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		for _, c := range get(sbx).Status.Conditions {
			Expect(c.Message).NotTo(ContainSubstring("s3cr3t-pw"))
		}
	})

	It("refuses a Secret of another type, and fails a pull with wrong credentials in its own words", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddRegistryImage(private, fake.RegistryImage{Auth: creds})
		create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "opaque"}, StringData: map[string]string{"x": "y"}})
		create(pullSecret(ns, "wrong", "registry.example:5000", "robot", "not-it"))
		opaque := session(ns, "opaque", a.node, private, func(s *dsv1alpha1.Sandbox) { s.Spec.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "opaque"} })
		wrong := session(ns, "wrong", a.node, private, func(s *dsv1alpha1.Sandbox) { s.Spec.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "wrong"} })
		create(opaque)
		create(wrong)

		Eventually(condition(opaque, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImagePullSecretInvalid"))
		Expect(message(opaque, dsv1alpha1.ConditionStalled)).To(ContainSubstring("kubernetes.io/dockerconfigjson"))
		Eventually(condition(wrong, dsv1alpha1.ConditionReconciling)).Should(Equal("True/ImagePullFailed"))
		Expect(message(wrong, dsv1alpha1.ConditionReconciling)).To(ContainSubstring("the registry refused the credentials"))
		Eventually(eventReasons(wrong)).Should(ContainElement("PullFailed"))
	})
})

var _ = Describe("Pull credentials stay in their namespace", func() {
	creds := &dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "robot", Password: "s3cr3t-pw"}
	teamB := dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "robot-b", Password: "b-pw"}
	withSecret := func(s *dsv1alpha1.Sandbox) {
		s.Spec.ImagePullSecret = &dsv1alpha1.LocalObjectReference{Name: "regcred"}
	}

	It("lets another namespace use an image one namespace pulled with its credentials only once its own were verified", func() {
		a := newAgent()
		a.docker.AddRegistryImage(private, fake.RegistryImage{Auth: creds, OtherAuth: []dd.RegistryAuth{teamB}})
		nsA, nsB := newNamespace(), newNamespace()
		create(pullSecret(nsA, "regcred", "registry.example:5000", "robot", "s3cr3t-pw"))
		first := session(nsA, "first", a.node, private, withSecret)
		create(first)
		Eventually(condition(first, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		bare := session(nsB, "bare", a.node, private)
		create(bare)
		Eventually(condition(bare, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImagePullCredentialsRequired"))
		Expect(phase(bare)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(message(bare, dsv1alpha1.ConditionStalled)).To(ContainSubstring("this namespace's credentials were not verified for it"))
		Expect(holdings(a.docker, string(get(bare).UID))).To(BeZero(), "nothing of the start is built")

		wrong := pullSecret(nsB, "regcred", "registry.example:5000", "robot-b", "guessed")
		create(wrong)
		fixed := session(nsB, "fixed", a.node, private, withSecret)
		create(fixed)
		Eventually(condition(fixed, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImagePullCredentialsRequired"))
		Expect(message(fixed, dsv1alpha1.ConditionStalled)).To(ContainSubstring(`refused a pull with imagePullSecret "regcred"`))
		Expect(holdings(a.docker, string(get(fixed).UID))).To(BeZero())

		By("the Secret fixed, its credentials are verified and the Sandbox starts")
		Eventually(func() error {
			cur := &corev1.Secret{}
			if err := k8s.Get(ctx(), client.ObjectKeyFromObject(wrong), cur); err != nil {
				return err
			}
			cur.Data = pullSecret(nsB, "regcred", "registry.example:5000", "robot-b", "b-pw").Data
			return k8s.Update(ctx(), cur)
		}).Should(Succeed())
		Eventually(condition(fixed, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(a.docker.Calls(fake.OpPullImage)).To(Equal(4), "A's pull and one check of each set of credentials B had: none retried")
		Consistently(condition(bare, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImagePullCredentialsRequired"))
	})
})

var _ = Describe("Image checks", func() {
	It("refuses an unpinned image when the node requires digests, before building anything", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.RequireDigest = true })
		pinnedRef := "dockside.dev/busybox@" + pinnedAt
		a.docker.AddImage(pinnedRef, dd.ImageInfo{})
		loose := session(ns, "loose", a.node, busybox)
		create(loose)
		pinned := session(ns, "pinned", a.node, pinnedRef)
		create(pinned)

		Eventually(condition(loose, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImageNotPinned"))
		Expect(phase(loose)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(message(loose, dsv1alpha1.ConditionStalled)).To(ContainSubstring("pinned by digest"))
		Expect(holdings(a.docker, string(get(loose).UID))).To(BeZero())
		Eventually(condition(pinned, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("refuses unpinned images at admission where the cluster applies config/policy", func() {
		ns := newNamespace()
		raw, err := os.ReadFile(filepath.Join("..", "..", "..", "config", "policy", "require-digest.yaml"))
		Expect(err).NotTo(HaveOccurred())
		docs := strings.Split(string(raw), "\n---\n")
		Expect(docs).To(HaveLen(2))
		policy, binding := &admissionv1.ValidatingAdmissionPolicy{}, &admissionv1.ValidatingAdmissionPolicyBinding{}
		Expect(yaml.UnmarshalStrict([]byte(docs[0]), policy)).To(Succeed())
		Expect(yaml.UnmarshalStrict([]byte(docs[1]), binding)).To(Succeed())
		Expect(binding.Spec.MatchResources).To(BeNil(), "as shipped it binds the whole cluster")
		// Here it binds only this spec's namespace: the API server is shared with the other specs.
		policy.Name, binding.Name = policy.Name+"-"+ns, binding.Name+"-"+ns
		binding.Spec.PolicyName = policy.Name
		binding.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
		}}
		create(policy)
		DeferCleanup(func() { Expect(k8s.Delete(ctx(), policy)).To(Succeed()) })
		create(binding)
		DeferCleanup(func() { Expect(k8s.Delete(ctx(), binding)).To(Succeed()) })

		Eventually(func() error { return k8s.Create(ctx(), session(ns, "loose", "", busybox)) }).Should(
			MatchError(ContainSubstring("image " + busybox + " is not pinned by digest")))
		svc := service(ns, "db")
		Expect(k8s.Create(ctx(), svc)).To(MatchError(ContainSubstring("is not pinned by digest")))
		create(session(ns, "pinned", "", "dockside.dev/busybox@"+pinnedAt))
	})

	It("verifies a pinned image's digest after the pull", func() {
		ns, a := newNamespace(), newAgent()
		good, bad := "registry.example/good@"+pinnedAt, "registry.example/bad@"+pinnedAt
		a.docker.AddRegistryImage(good, fake.RegistryImage{})
		a.docker.AddRegistryImage(bad, fake.RegistryImage{Digest: "sha256:" + strings.Repeat("f", 64)})
		ok := session(ns, "good", a.node, good)
		mismatch := session(ns, "bad", a.node, bad)
		create(ok)
		create(mismatch)

		Eventually(condition(ok, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Eventually(condition(mismatch, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImageDigestMismatch"))
		Expect(phase(mismatch)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(containers(a.docker, mismatch, dsv1alpha1.RolePrimary)).To(BeEmpty())
	})

	It("refuses an image that declares a VOLUME unless a scratch mount covers it", func() {
		ns := newNamespace()
		node := newNode()
		docker := &specDocker{Driver: newDocker(node), specs: map[string]dd.ContainerSpec{}}
		docker.AddImage(volumed, dd.ImageInfo{Volumes: []string{"/data", "/cache"}})
		a := startAgent(node, docker.Driver, func(o *agent.Options) { o.Driver = docker })
		bare := session(ns, "bare", a.node, volumed)
		create(bare)
		db := service(ns, "db")
		db.Spec.Image = volumed
		db.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/data", Size: resource.MustParse("16Mi")}, {MountPath: "/cache", Size: resource.MustParse("8Mi")}}
		create(db)
		covered := session(ns, "covered", a.node, volumed, func(s *dsv1alpha1.Sandbox) {
			s.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/data", Size: resource.MustParse("32Mi")}}
			s.Spec.Workspace.MountPath = "/cache"
			s.Spec.Services = []string{"db"}
		})
		create(covered)

		Eventually(condition(bare, dsv1alpha1.ConditionStalled)).Should(Equal("True/ImageDeclaresVolumes"))
		Expect(message(bare, dsv1alpha1.ConditionStalled)).To(And(ContainSubstring("/data"), ContainSubstring("/cache"), ContainSubstring("spec.scratch")))
		Eventually(condition(covered, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		// Besides the scratch mounts, each gets its /tmp: a quarter of its memory (the default 512Mi), at most 64Mi.
		tmp := dd.TmpfsMount{Target: "/tmp", SizeBytes: 64 << 20}
		Expect(docker.spec(dsv1alpha1.RolePrimary, "").Tmpfs).To(Equal([]dd.TmpfsMount{{Target: "/data", SizeBytes: 32 << 20}, tmp}))
		Expect(docker.spec(dsv1alpha1.RoleService, "db").Tmpfs).To(ConsistOf(dd.TmpfsMount{Target: "/data", SizeBytes: 16 << 20}, dd.TmpfsMount{Target: "/cache", SizeBytes: 8 << 20}, tmp))
	})

	It("refuses scratch mounts that clash, at admission", func() {
		ns := newNamespace()
		clash := session(ns, "clash", "", busybox, func(s *dsv1alpha1.Sandbox) {
			s.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/workspace", Size: resource.MustParse("8Mi")}}
		})
		Expect(k8s.Create(ctx(), clash)).To(MatchError(ContainSubstring("a scratch mountPath must differ from the workspace mountPath")))
		huge := session(ns, "huge", "", busybox, func(s *dsv1alpha1.Sandbox) {
			s.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/tmp", Size: resource.MustParse("9Gi")}}
		})
		Expect(k8s.Create(ctx(), huge)).To(MatchError(ContainSubstring("scratch size must be between 1Mi and 8Gi")))
		odd := session(ns, "odd", "", busybox, func(s *dsv1alpha1.Sandbox) {
			s.Spec.Scratch = []dsv1alpha1.ScratchMount{{MountPath: "/proc/x", Size: resource.MustParse("8Mi")}, {MountPath: "/a/../b", Size: resource.MustParse("8Mi")}}
		})
		Expect(k8s.Create(ctx(), odd)).To(MatchError(And(ContainSubstring("not be under /proc"), ContainSubstring("must not contain '.' or '..'"))))
	})
})

var _ = Describe("The startup deadline", func() {
	It("fails a pull that outlasts it with ImagePullTimeout, and a spec change starts again", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddRegistryImage(remote, fake.RegistryImage{Delay: time.Hour})
		sbx := session(ns, "slow-pull", a.node, remote, deadlineOf(2))
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReconciling)).Should(Equal("True/ImagePulling"))
		start := time.Now()
		Eventually(condition(sbx, dsv1alpha1.ConditionStalled), 5*time.Second).Should(Equal("True/ImagePullTimeout"))
		Expect(time.Since(start)).To(BeNumerically("<", 3500*time.Millisecond))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)()).To(Equal("True/ImagePullTimeout"))
		Expect(message(sbx, dsv1alpha1.ConditionStalled)).To(ContainSubstring("startupDeadlineSeconds (2s)"))
		Eventually(eventReasons(sbx)).Should(ContainElement("StartupFailed"))

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Image = busybox })
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		cur := get(sbx)
		Expect(cur.Status.Startup.TopologyGeneration).To(Equal(cur.Status.TopologyGeneration))
	})

	It("says what the last failed pull reported when it gives up", func() {
		ns, a := newNamespace(), newAgent()
		sbx := session(ns, "no-such-image", a.node, "registry.example/nothing/here:1", deadlineOf(3))
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReconciling)).Should(Equal("True/ImagePullFailed"))
		Expect(message(sbx, dsv1alpha1.ConditionReconciling)).To(ContainSubstring("the registry has no such image"))
		Eventually(condition(sbx, dsv1alpha1.ConditionStalled), 6*time.Second).Should(Equal("True/ImagePullTimeout"))
		Expect(message(sbx, dsv1alpha1.ConditionStalled)).To(ContainSubstring("the registry has no such image"))
		Expect(a.docker.Calls(fake.OpPullImage)).To(BeNumerically(">=", 2), "failed pulls are tried again with a backoff")
		Expect(a.docker.Calls(fake.OpPullImage)).To(BeNumerically("<=", 3), "...not hammered")
	})

	It("names the service that was not ready, and removes what the start built but the workspace", func() {
		ns := newNamespace()
		node := newNode()
		docker := newDocker(node)
		docker.SetExecHandler(failingChecks)
		a := startAgent(node, docker)
		db := service(ns, "db")
		db.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"false"}, PeriodSeconds: 1, FailureThreshold: 100}
		create(db)
		sbx := session(ns, "never-ready", a.node, busybox, deadlineOf(2), func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReconciling)).Should(Equal("True/WaitingForServices"))
		Eventually(condition(sbx, dsv1alpha1.ConditionStalled), 5*time.Second).Should(Equal("True/ServiceNotReady"))
		Expect(message(sbx, dsv1alpha1.ConditionStalled)).To(ContainSubstring(`service "db"`))
		Eventually(func() []dd.ContainerInfo { return containers(a.docker, sbx, dsv1alpha1.RoleService) }).Should(BeEmpty())
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(BeEmpty())
		Eventually(func() int { return len(networksOf(a.docker, sbx)) }).Should(BeZero())
		volumes, err := a.docker.ListVolumes(ctx(), map[string]string{dsv1alpha1.LabelUID: string(get(sbx).UID)})
		Expect(err).NotTo(HaveOccurred())
		Expect(volumes).To(ConsistOf(HaveField("Labels", HaveKeyWithValue(dsv1alpha1.LabelRole, dsv1alpha1.RoleWorkspace))), "the workspace is kept")
		Expect(containers(a.docker, sbx, dsv1alpha1.RoleHolder)).To(BeEmpty(), "no primary ever held it, so it got no holder")
		Expect(get(sbx).Status.NetworkID).To(BeEmpty())
	})

	It("cuts a Docker call that hangs at the deadline and names the phase", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.DockerTimeout = time.Minute })
		create(service(ns, "db"))
		a.docker.HangNext(fake.OpEnsureNetwork)
		sbx := session(ns, "stuck-network", a.node, busybox, deadlineOf(2), func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionStalled), 5*time.Second).Should(Equal("True/NetworkTimeout"))
		Expect(message(sbx, dsv1alpha1.ConditionStalled)).NotTo(ContainSubstring("fake://"))
	})

	It("keeps the reason of a refusal the start was already stalled on", func() {
		ns, a := newNamespace(), newAgent()
		sbx := session(ns, "never-here", a.node, "dockside.dev/never:local", deadlineOf(1), func(s *dsv1alpha1.Sandbox) { s.Spec.ImagePullPolicy = dsv1alpha1.PullNever })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned), 4*time.Second).Should(Equal("True/ImageNotPresent"))
		Expect(message(sbx, dsv1alpha1.ConditionTopologyPoisoned)).To(ContainSubstring("startupDeadlineSeconds (1s)"))
		a.docker.AddImage("dockside.dev/never:local", dd.ImageInfo{})
		Consistently(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed), "a failed start stays failed until the spec changes")
	})
})

// messageOf polls the message of one condition of the Sandbox ("" while it is absent).
func messageOf(sbx *dsv1alpha1.Sandbox, typ string) func() string {
	return func() string {
		cur := &dsv1alpha1.Sandbox{}
		if err := k8s.Get(ctx(), client.ObjectKeyFromObject(sbx), cur); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, typ); c != nil {
			return c.Message
		}
		return ""
	}
}

// networksOf lists the fake daemon's networks of the Sandbox.
func networksOf(d *fake.Driver, sbx *dsv1alpha1.Sandbox) []dd.NetworkInfo {
	GinkgoHelper()
	list, err := d.ListNetworks(ctx(), map[string]string{dsv1alpha1.LabelUID: string(get(sbx).UID)})
	Expect(err).NotTo(HaveOccurred())
	return list
}
