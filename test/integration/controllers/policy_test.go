//go:build integration

package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

var _ = Describe("Missing inputs", func() {
	It("waits for a Secret its env needs, never showing the value", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "secretive", a.node)
		sbx.Spec.Env = []dsv1alpha1.EnvVar{{Name: "TOKEN", ValueFrom: &dsv1alpha1.EnvVarSource{SecretKeyRef: dsv1alpha1.SecretKeySelector{Name: "creds", Key: "token"}}}}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/SecretNotFound"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring(`"creds"`))
		create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds"}, StringData: map[string]string{"token": "s3cr3t-value"}})
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		for _, c := range get(sbx).Status.Conditions {
			Expect(c.Message).NotTo(ContainSubstring("s3cr3t-value"))
		}
	})
})
