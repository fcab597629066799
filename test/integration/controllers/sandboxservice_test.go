//go:build integration

package controllers_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// getService reads the current version of a SandboxService.
func getService(ns, name string) *dsv1alpha1.SandboxService {
	GinkgoHelper()
	svc := &dsv1alpha1.SandboxService{}
	Expect(k8s.Get(ctx(), objectKey(ns, name), svc)).To(Succeed())
	return svc
}

// serviceCondition polls one condition of a SandboxService, as "Status/Reason".
func serviceCondition(ns, name, typ string) func() string {
	return func() string {
		svc := &dsv1alpha1.SandboxService{}
		if err := k8s.Get(ctx(), objectKey(ns, name), svc); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(svc.Status.Conditions, typ); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return "absent"
	}
}

// usedBy polls a SandboxService's usedBy list and count.
func usedBy(ns, name string) func() string {
	return func() string {
		svc := &dsv1alpha1.SandboxService{}
		if err := k8s.Get(ctx(), objectKey(ns, name), svc); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d %v", svc.Status.UsedByCount, svc.Status.UsedBy)
	}
}

// updateService applies change to the current version of a SandboxService, retrying on conflicts with agents.
func updateService(ns, name string, change func(*dsv1alpha1.SandboxService)) {
	GinkgoHelper()
	Eventually(func() error {
		svc := &dsv1alpha1.SandboxService{}
		if err := k8s.Get(ctx(), objectKey(ns, name), svc); err != nil {
			return err
		}
		change(svc)
		return k8s.Update(ctx(), svc)
	}).Should(Succeed())
}

var _ = Describe("A SandboxService", func() {
	It("is protected, accepted, and says which Sandboxes use it", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "db"))
		Eventually(serviceCondition(ns, "db", dsv1alpha1.ConditionReady)).Should(Equal("True/Accepted"))
		Expect(serviceCondition(ns, "db", dsv1alpha1.ConditionInUse)()).To(Equal("False/NotInUse"))
		svc := getService(ns, "db")
		Expect(svc.Finalizers).To(ContainElement(dsv1alpha1.FinalizerInUse))
		Expect(svc.Status.ObservedGeneration).To(Equal(svc.Generation))

		for _, name := range []string{"beta", "alpha"} {
			sbx := sandbox(ns, name, a.node)
			sbx.Spec.Services = []string{"db"}
			create(sbx)
		}
		unbound := sandbox(ns, "gamma", "")
		unbound.Spec.Services = []string{"db"}
		create(unbound)
		Eventually(usedBy(ns, "db")).Should(Equal("3 [alpha beta gamma]"))
		Expect(serviceCondition(ns, "db", dsv1alpha1.ConditionInUse)()).To(Equal("True/InUse"))
		Expect(meta.FindStatusCondition(getService(ns, "db").Status.Conditions, dsv1alpha1.ConditionInUse).Message).
			To(Equal("used by Sandbox alpha, beta, gamma"))

		Expect(k8s.Delete(ctx(), unbound)).To(Succeed())
		Eventually(usedBy(ns, "db")).Should(Equal("2 [alpha beta]"))
		update(sandbox(ns, "beta", a.node), func(s *dsv1alpha1.Sandbox) { s.Spec.Services = nil })
		Eventually(usedBy(ns, "db")).Should(Equal("1 [alpha]"), "a Sandbox that stops naming it no longer counts")
	})

	It("lists at most MaxUsedBy users, and counts them all", func() {
		ns := newNamespace()
		// Bound to a node no agent serves: they only need to exist and name the service.
		for i := range dsv1alpha1.MaxUsedBy + 3 {
			sbx := sandbox(ns, fmt.Sprintf("user-%02d", i), "nowhere")
			sbx.Spec.Services = []string{"db"}
			create(sbx)
		}
		newAgent()
		create(service(ns, "db"))
		Eventually(func() int32 { return getService(ns, "db").Status.UsedByCount }).Should(BeEquivalentTo(dsv1alpha1.MaxUsedBy + 3))
		svc := getService(ns, "db")
		Expect(svc.Status.UsedBy).To(HaveLen(dsv1alpha1.MaxUsedBy))
		Expect(svc.Status.UsedBy[0]).To(Equal("user-00"))
		Expect(meta.FindStatusCondition(svc.Status.Conditions, dsv1alpha1.ConditionInUse).Message).To(HaveSuffix("and 30 more"))
	})

	It("cannot be deleted while a Sandbox names it: the deletion waits, saying why, until that Sandbox is gone", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "db"))
		sbx := sandbox(ns, "user", a.node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Eventually(usedBy(ns, "db")).Should(Equal("1 [user]"))
		serviceContainer := container(a.docker, sbx, dsv1alpha1.RoleService, "db").Name

		Expect(k8s.Delete(ctx(), getService(ns, "db"))).To(Succeed())
		Eventually(func() string {
			c := meta.FindStatusCondition(getService(ns, "db").Status.Conditions, dsv1alpha1.ConditionInUse)
			return c.Message
		}).Should(Equal("deletion waits until no Sandbox names it; used by Sandbox user"))
		Consistently(func() error { return k8s.Get(ctx(), objectKey(ns, "db"), &dsv1alpha1.SandboxService{}) }).Should(Succeed())

		By("leaving the running Sandbox alone: the deletion does not roll its topology")
		cur := get(sbx)
		Expect(cur.Status.TopologyGeneration).To(BeEquivalentTo(1))
		Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, dsv1alpha1.ConditionReady)).To(BeTrue())
		Expect(container(a.docker, sbx, dsv1alpha1.RoleService, "db").Name).To(Equal(serviceContainer))
		Expect(condition(sbx, dsv1alpha1.ConditionServicesUpToDate)()).To(Equal("True/UpToDate"))

		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(func() bool {
			err := k8s.Get(ctx(), objectKey(ns, "db"), &dsv1alpha1.SandboxService{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}).Should(BeTrue(), "gone once its last user is")
	})

	It("is not Ready while a Secret its env names is missing", func() {
		ns := newNamespace()
		newAgent()
		svc := service(ns, "db")
		svc.Spec.Env = []dsv1alpha1.EnvVar{{Name: "PASSWORD", ValueFrom: &dsv1alpha1.EnvVarSource{SecretKeyRef: dsv1alpha1.SecretKeySelector{Name: "db-creds", Key: "password"}}}}
		create(svc)
		Eventually(serviceCondition(ns, "db", dsv1alpha1.ConditionReady)).Should(Equal("False/SecretNotFound"))
		Expect(meta.FindStatusCondition(getService(ns, "db").Status.Conditions, dsv1alpha1.ConditionReady).Message).
			To(Equal(`env PASSWORD names Secret "db-creds", which does not exist`))

		create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-creds"}, StringData: map[string]string{"password": "s3cr3t"}})
		Eventually(serviceCondition(ns, "db", dsv1alpha1.ConditionReady)).Should(Equal("True/Accepted"))
	})

	It("changes without disrupting the running Sandboxes that use it: they report it and pick it up at their next roll", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "db"))
		session := sandbox(ns, "live", a.node)
		session.Spec.Services = []string{"db"}
		create(session)
		Eventually(condition(session, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		before := container(a.docker, session, dsv1alpha1.RoleService, "db").Name

		updateService(ns, "db", func(svc *dsv1alpha1.SandboxService) { svc.Spec.Command = []string{"sleep", "7200"} })
		Eventually(condition(session, dsv1alpha1.ConditionServicesUpToDate)).Should(Equal("False/OutOfDate"))
		Expect(message(session, dsv1alpha1.ConditionServicesUpToDate)).To(Equal(`service "db" runs generation 1 of its SandboxService, which is at 2`))
		Consistently(func() int64 { return get(session).Status.TopologyGeneration }).Should(BeEquivalentTo(1))
		Expect(container(a.docker, session, dsv1alpha1.RoleService, "db").Name).To(Equal(before), "the running instance is kept")
		Expect(condition(session, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))

		By("rolling at the Sandbox's own next change")
		update(session, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "MODE", Value: "2"}} })
		Eventually(func() int64 { return get(session).Status.TopologyGeneration }).Should(BeEquivalentTo(2))
		Eventually(condition(session, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(condition(session, dsv1alpha1.ConditionServicesUpToDate)()).To(Equal("True/UpToDate"))
		Expect(get(session).Status.Services[0].ServiceGeneration).To(BeEquivalentTo(2))
	})

	It("refuses a topology whose services claim one name twice, before anything is built, and never disrupts one that runs", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "api"))
		gateway := service(ns, "gateway")
		gateway.Spec.Aliases = []string{"api"}
		create(gateway)
		clash := sandbox(ns, "clash", a.node)
		clash.Spec.Services = []string{"api", "gateway"}
		create(clash)
		Eventually(condition(clash, dsv1alpha1.ConditionStalled)).Should(Equal("True/NameCollision"))
		Expect(phase(clash)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(condition(clash, dsv1alpha1.ConditionReady)()).To(Equal("False/NameCollision"))
		Expect(message(clash, dsv1alpha1.ConditionReady)).To(ContainSubstring(`the name "api" is claimed by service "api" and by an alias of service "gateway"`))
		Expect(holdings(a.docker, string(get(clash).UID))).To(BeZero(), "nothing is built for it")

		By("a SandboxService edited to collide with a running Sandbox: it keeps running and says so")
		create(service(ns, "cache"))
		live := sandbox(ns, "live", a.node)
		live.Spec.Services = []string{"api", "cache"}
		create(live)
		Eventually(condition(live, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		updateService(ns, "cache", func(svc *dsv1alpha1.SandboxService) { svc.Spec.Aliases = []string{"api"} })
		Eventually(condition(live, dsv1alpha1.ConditionServicesUpToDate)).Should(Equal("False/NameCollision"))
		Expect(condition(live, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))
		Expect(get(live).Status.TopologyGeneration).To(BeEquivalentTo(1))

		By("making the names unique again, which starts the refused one")
		updateService(ns, "gateway", func(svc *dsv1alpha1.SandboxService) { svc.Spec.Aliases = []string{"edge"} })
		Eventually(condition(clash, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})
})
