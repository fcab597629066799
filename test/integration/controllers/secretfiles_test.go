//go:build integration

package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
)

var _ = Describe("Secret files", func() {
	It("waits for the Secret with nothing made, writes the files before the primary starts, and a roll writes them afresh", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "creds", a.node)
		sbx.Spec.SecretFiles = []dsv1alpha1.SecretFile{
			{SecretName: "creds", Key: "token", Path: "token"},
			{SecretName: "creds", Key: "token", Path: "old/token"},
		}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/SecretNotFound"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring(`secret file "token" needs Secret "creds"`))
		Consistently(func() int { return holdings(a.docker, string(get(sbx).UID)) }, "1s").Should(BeZero(), "nothing is made without the Secret")

		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, StringData: map[string]string{"token": "first-value"}}
		create(secret)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		primary := container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name
		Expect(readFile(a.docker, primary, "/run/secrets/dockside/token")).To(Equal("first-value"))
		Eventually(func() []dd.ContainerInfo { return secretsHolders(a.docker, sbx) }).Should(BeEmpty(), "the secrets holder goes once the primary runs")
		Expect(readFile(a.docker, primary, "/run/secrets/dockside/old/token")).To(Equal("first-value"), "the running primary keeps the files")

		secret.StringData = map[string]string{"token": "second-value"}
		Expect(k8s.Update(ctx(), secret)).To(Succeed())
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.SecretFiles = s.Spec.SecretFiles[:1] })
		Eventually(func() int64 { return get(sbx).Status.TopologyGeneration }).Should(Equal(int64(2)))
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		primary = container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name
		Expect(readFile(a.docker, primary, "/run/secrets/dockside/token")).To(Equal("second-value"))
		_, err := a.docker.CopyFrom(ctx(), primary, "/run/secrets/dockside/old/token")
		Expect(dd.IsNotFound(err)).To(BeTrue(), "a file dropped from the spec is gone after the roll, got %v", err)

		uid := string(get(sbx).UID)
		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero(), "the secrets volume goes with the rest")
	})
})

// secretsHolders lists the Sandbox's holders of secret files.
func secretsHolders(d *fake.Driver, sbx *dsv1alpha1.Sandbox) []dd.ContainerInfo {
	GinkgoHelper()
	var out []dd.ContainerInfo
	for _, c := range containers(d, sbx, dsv1alpha1.RoleHolder) {
		if c.Labels[dsv1alpha1.LabelService] == "secrets" {
			out = append(out, c)
		}
	}
	return out
}

// readFile reads one file out of a container of the fake daemon.
func readFile(d *fake.Driver, container, path string) string {
	GinkgoHelper()
	rc, err := d.CopyFrom(context.Background(), container, path)
	Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	return tarball.First(GinkgoT(), rc)
}
