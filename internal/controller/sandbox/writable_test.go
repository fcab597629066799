package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestWithEnv(t *testing.T) {
	g := NewWithT(t)
	defaults := []dd.EnvVar{{Name: "HOME", Value: "/workspace"}}
	g.Expect(withEnv(defaults, nil)).To(Equal(defaults))
	g.Expect(withEnv(defaults, []dd.EnvVar{{Name: "A", Value: "1"}})).To(Equal([]dd.EnvVar{{Name: "HOME", Value: "/workspace"}, {Name: "A", Value: "1"}}))
	g.Expect(withEnv(defaults, []dd.EnvVar{{Name: "HOME", Value: "/home/me"}, {Name: "A", Value: "1"}})).
		To(Equal([]dd.EnvVar{{Name: "HOME", Value: "/home/me"}, {Name: "A", Value: "1"}}), "the spec's HOME wins")
}

func TestContainerSpecsHaveWritablePlaces(t *testing.T) {
	g := NewWithT(t)
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "box", UID: "u"},
		Spec: dsv1alpha1.SandboxSpec{
			Image: "img", Resources: dsv1alpha1.Resources{Memory: resource.MustParse("64Mi")},
			Workspace: dsv1alpha1.Workspace{MountPath: "/work"},
		},
	}
	r := &Reconciler{}
	primary := r.primarySpec(newScope(sbx))
	g.Expect(primary.Env).To(Equal([]dd.EnvVar{{Name: "HOME", Value: "/work"}}))
	g.Expect(primary.Tmpfs).To(Equal([]dd.TmpfsMount{{Target: "/tmp", SizeBytes: 16 << 20}}))
	g.Expect(primary.RunAsRoot).To(BeFalse())
	g.Expect(primary.WritableRootBytes).To(BeZero(), "read-only root")
	g.Expect(primary.Init).To(BeFalse(), "a daemon without an init")
	r.Options.Init = true
	g.Expect(r.primarySpec(newScope(sbx)).Init).To(BeTrue(), "the daemon's init reaps the orphans of killed processes")

	svc := &dsv1alpha1.SandboxService{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: dsv1alpha1.SandboxServiceSpec{Image: "db"}}
	service := r.serviceSpec(newScope(sbx), svc)
	g.Expect(service.Env).To(Equal([]dd.EnvVar{{Name: "HOME", Value: "/tmp"}}))
	g.Expect(service.Tmpfs).To(Equal([]dd.TmpfsMount{{Target: "/tmp", SizeBytes: 64 << 20}}), "a quarter of the default 512Mi")
	g.Expect(service.Init).To(BeFalse(), "a service's PID 1 is its image's, as in a pod")
}
