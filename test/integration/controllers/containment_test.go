//go:build integration

package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/agent"
)

// specAgent starts an agent on a fresh node whose fake daemon has storage and records the container specs
// it is asked for.
func specAgent(storage dd.StorageInfo, tweak ...func(*agent.Options)) (*testAgent, *specDocker) {
	node := newNode()
	docker := &specDocker{Driver: newDocker(node), specs: map[string]dd.ContainerSpec{}}
	docker.SetStorage(storage)
	tweak = append(tweak, func(o *agent.Options) { o.Driver = docker })
	return startAgent(node, docker.Driver, tweak...), docker
}

// extfs is the storage of most Docker hosts, which cannot cap a writable layer; xfs (with pquota) can.
var (
	extfs = dd.StorageInfo{Driver: "overlay2", BackingFS: "extfs"}
	xfs   = dd.StorageInfo{Driver: "overlay2", BackingFS: "xfs"}
)

func asRoot(s *dsv1alpha1.Sandbox) { s.Spec.RunAsRoot = true }

func writableRoot(size string) func(*dsv1alpha1.Sandbox) {
	return func(s *dsv1alpha1.Sandbox) {
		s.Spec.RootFilesystem = dsv1alpha1.RootFilesystem{Mode: dsv1alpha1.RootFilesystemWritable, Size: ptr.To(resource.MustParse(size))}
	}
}

var _ = Describe("Containment", func() {
	It("asks Docker for a read-only root, no root user, a /tmp and a HOME by default", func() {
		ns := newNamespace()
		a, docker := specAgent(extfs)
		create(service(ns, "db"))
		sbx := session(ns, "plain", a.node, busybox, func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		for _, c := range []dd.ContainerSpec{docker.spec(dsv1alpha1.RolePrimary, ""), docker.spec(dsv1alpha1.RoleService, "db"), docker.spec(dsv1alpha1.RoleHolder, "")} {
			Expect(c.RunAsRoot).To(BeFalse(), c.Role)
			Expect(c.WritableRootBytes).To(BeZero(), c.Role)
		}
		primary, db := docker.spec(dsv1alpha1.RolePrimary, ""), docker.spec(dsv1alpha1.RoleService, "db")
		Expect(primary.Tmpfs).To(ConsistOf(dd.TmpfsMount{Target: "/tmp", SizeBytes: 64 << 20}))
		Expect(primary.Env).To(ContainElement(dd.EnvVar{Name: "HOME", Value: "/workspace"}))
		Expect(db.Tmpfs).To(ConsistOf(dd.TmpfsMount{Target: "/tmp", SizeBytes: 64 << 20}))
		Expect(db.Env).To(ContainElement(dd.EnvVar{Name: "HOME", Value: "/tmp"}))
	})

	It("refuses runAsRoot, on the Sandbox or a service, unless the agent allows root", func() {
		ns := newNamespace()
		a := newAgent()
		primary := session(ns, "root-primary", a.node, busybox, asRoot)
		create(primary)
		db := service(ns, "db")
		db.Spec.RunAsRoot = true
		create(db)
		viaService := session(ns, "root-service", a.node, busybox, func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(viaService)

		Eventually(condition(primary, dsv1alpha1.ConditionStalled)).Should(Equal("True/RootNotAllowed"))
		Expect(message(primary, dsv1alpha1.ConditionStalled)).To(And(ContainSubstring("the primary container"), ContainSubstring("--allow-root"), ContainSubstring(a.node)))
		Expect(phase(primary)()).To(Equal(dsv1alpha1.SandboxFailed))
		Eventually(condition(viaService, dsv1alpha1.ConditionStalled)).Should(Equal("True/RootNotAllowed"))
		Expect(message(viaService, dsv1alpha1.ConditionStalled)).To(ContainSubstring(`service db`))
		for _, sbx := range []*dsv1alpha1.Sandbox{primary, viaService} {
			Expect(containers(a.docker, sbx, "")).To(BeEmpty(), "nothing is built for %s", sbx.Name)
		}

		By("dropping runAsRoot, which rolls the topology and starts it")
		update(primary, func(s *dsv1alpha1.Sandbox) { s.Spec.RunAsRoot = false })
		Eventually(condition(primary, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("runs as root where the agent allows it", func() {
		ns := newNamespace()
		a, docker := specAgent(extfs, func(o *agent.Options) { o.AllowRoot = true })
		db := service(ns, "db")
		db.Spec.RunAsRoot = true
		create(db)
		sbx := session(ns, "root", a.node, busybox, asRoot, func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(docker.spec(dsv1alpha1.RolePrimary, "").RunAsRoot).To(BeTrue())
		Expect(docker.spec(dsv1alpha1.RoleService, "db").RunAsRoot).To(BeTrue())
		Expect(docker.spec(dsv1alpha1.RoleHolder, "").RunAsRoot).To(BeFalse())
	})

	It("refuses network mode Unrestricted on a node whose agent refuses it, and runs it elsewhere", func() {
		ns := newNamespace()
		unrestricted := func(s *dsv1alpha1.Sandbox) { s.Spec.Network.Mode = dsv1alpha1.NetworkUnrestricted }
		refusing := newAgent(func(o *agent.Options) { o.RefuseUnrestricted = true })
		refused := session(ns, "refused", refusing.node, busybox, unrestricted)
		create(refused)
		Eventually(condition(refused, dsv1alpha1.ConditionStalled)).Should(Equal("True/UnrestrictedNotAllowed"))
		Expect(message(refused, dsv1alpha1.ConditionStalled)).To(And(ContainSubstring("--refuse-unrestricted"), ContainSubstring(refusing.node)))
		Expect(phase(refused)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(containers(refusing.docker, refused, "")).To(BeEmpty())
		isolated := session(ns, "isolated", refusing.node, busybox, func(s *dsv1alpha1.Sandbox) { s.Spec.Network.Mode = dsv1alpha1.NetworkIsolated })
		create(isolated)
		Eventually(condition(isolated, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		allowing := newAgent()
		allowed := session(ns, "allowed", allowing.node, busybox, unrestricted)
		create(allowed)
		Eventually(condition(allowed, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("refuses a writable root where the storage driver cannot cap it, naming the driver", func() {
		ns := newNamespace()
		a, _ := specAgent(extfs)
		sbx := session(ns, "writable", a.node, busybox, writableRoot("256Mi"))
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionStalled)).Should(Equal("True/WritableRootUnsupported"))
		Expect(message(sbx, dsv1alpha1.ConditionStalled)).To(ContainSubstring("storage driver overlay2 on extfs cannot cap a container's writable layer"))
		Expect(containers(a.docker, sbx, "")).To(BeEmpty())
	})

	It("gives a capped writable root where the storage driver can cap it", func() {
		ns := newNamespace()
		a, docker := specAgent(xfs)
		sbx := session(ns, "writable", a.node, busybox, writableRoot("256Mi"))
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(docker.spec(dsv1alpha1.RolePrimary, "").WritableRootBytes).To(BeEquivalentTo(256 << 20))
	})
})
