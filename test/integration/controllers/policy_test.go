package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("Node policy and missing inputs", func() {
	It("refuses an image that is not pinned by digest when the node requires it", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.RequireDigest = true })
		pinnedRef := "dockside.dev/busybox@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		a.docker.AddImage(pinnedRef, dd.ImageInfo{})
		loose := sandbox(ns, "loose", a.node)
		create(loose)
		pinned := sandbox(ns, "pinned", a.node)
		pinned.Spec.Image = pinnedRef
		create(pinned)

		Eventually(condition(loose, v1.ConditionStalled)).Should(Equal("True/ImageFailed"))
		Expect(phase(loose)()).To(Equal(v1.SandboxFailed))
		Expect(message(loose, v1.ConditionStalled)).To(ContainSubstring("pinned by digest"))
		Expect(containers(a.docker, loose, v1.RolePrimary)).To(BeEmpty())
		Eventually(condition(pinned, v1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("waits for an image that is not on the node, and starts once it is", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "imageless", a.node)
		sbx.Spec.Image = "dockside.dev/later:local"
		create(sbx)

		Eventually(condition(sbx, v1.ConditionStalled)).Should(Equal("True/ImageFailed"))
		Expect(message(sbx, v1.ConditionStalled)).To(ContainSubstring("never pulls"))
		a.docker.AddImage("dockside.dev/later:local", dd.ImageInfo{})
		Eventually(condition(sbx, v1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("refuses an image that declares a VOLUME, for good", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.AddImage("dockside.dev/with-volume:local", dd.ImageInfo{Volumes: []string{"/data"}})
		sbx := sandbox(ns, "volumed", a.node)
		sbx.Spec.Image = "dockside.dev/with-volume:local"
		create(sbx)

		Eventually(condition(sbx, v1.ConditionStalled)).Should(Equal("True/ImageFailed"))
		Expect(condition(sbx, v1.ConditionReconciling)()).To(Equal("False/ImageFailed"))
	})

	It("waits for a Secret its env needs, never showing the value", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "secretive", a.node)
		sbx.Spec.Env = []v1.EnvVar{{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: v1.SecretKeySelector{Name: "creds", Key: "token"}}}}
		create(sbx)

		Eventually(condition(sbx, v1.ConditionReady)).Should(Equal("False/SecretNotFound"))
		Expect(message(sbx, v1.ConditionReady)).To(ContainSubstring(`"creds"`))
		create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, StringData: map[string]string{"token": "s3cr3t-value"}})
		Eventually(condition(sbx, v1.ConditionReady)).Should(Equal("True/Running"))
		for _, c := range get(sbx).Status.Conditions {
			Expect(c.Message).NotTo(ContainSubstring("s3cr3t-value"))
		}
	})
})
