package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestTmpSize(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tmpSize(8<<20)).To(BeEquivalentTo(2<<20), "a quarter of the smallest memory limit")
	g.Expect(tmpSize(128 << 20)).To(BeEquivalentTo(32 << 20))
	g.Expect(tmpSize(256 << 20)).To(BeEquivalentTo(64 << 20))
	g.Expect(tmpSize(64<<30)).To(BeEquivalentTo(64<<20), "at most 64 MiB")
}

func TestWithTmp(t *testing.T) {
	g := NewWithT(t)
	data := dd.TmpfsMount{Target: "/data", SizeBytes: 1 << 20}
	g.Expect(withTmp(nil, 64<<20, "/workspace")).To(Equal([]dd.TmpfsMount{{Target: "/tmp", SizeBytes: 16 << 20}}))
	g.Expect(withTmp([]dd.TmpfsMount{data}, 64<<20)).To(Equal([]dd.TmpfsMount{data, {Target: "/tmp", SizeBytes: 16 << 20}}))
	own := dd.TmpfsMount{Target: "/tmp", SizeBytes: 1 << 30}
	g.Expect(withTmp([]dd.TmpfsMount{own}, 64<<20)).To(Equal([]dd.TmpfsMount{own}), "a scratch mount at /tmp replaces it")
	g.Expect(withTmp(nil, 64<<20, "/tmp")).To(BeEmpty(), "so does a workspace there")
}

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
	r := &SandboxReconciler{}
	primary := r.primarySpec(newScope(sbx))
	g.Expect(primary.Env).To(Equal([]dd.EnvVar{{Name: "HOME", Value: "/work"}}))
	g.Expect(primary.Tmpfs).To(Equal([]dd.TmpfsMount{{Target: "/tmp", SizeBytes: 16 << 20}}))
	g.Expect(primary.RunAsRoot).To(BeFalse())
	g.Expect(primary.WritableRootBytes).To(BeZero(), "read-only root")

	svc := &dsv1alpha1.SandboxService{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: dsv1alpha1.SandboxServiceSpec{Image: "db"}}
	service := r.serviceSpec(newScope(sbx), svc)
	g.Expect(service.Env).To(Equal([]dd.EnvVar{{Name: "HOME", Value: "/tmp"}}))
	g.Expect(service.Tmpfs).To(Equal([]dd.TmpfsMount{{Target: "/tmp", SizeBytes: 64 << 20}}), "a quarter of the default 512Mi")
}

func TestPrimaryWritable(t *testing.T) {
	g := NewWithT(t)
	spec := dsv1alpha1.SandboxSpec{
		Workspace: dsv1alpha1.Workspace{MountPath: "/ws", Size: resource.MustParse("64Mi")},
		Scratch:   []dsv1alpha1.ScratchMount{{MountPath: "/data", Size: resource.MustParse("1Mi")}},
		Resources: dsv1alpha1.Resources{Memory: resource.MustParse("128Mi")},
	}
	g.Expect(PrimaryWritable(spec)).To(Equal(Writable{
		Workspace: dd.TmpfsMount{Target: "/ws", SizeBytes: 64 << 20},
		Tmpfs:     []dd.TmpfsMount{{Target: "/data", SizeBytes: 1 << 20}, {Target: "/tmp", SizeBytes: 32 << 20}},
	}))
	g.Expect(PrimaryWritable(dsv1alpha1.SandboxSpec{}).Workspace).To(Equal(dd.TmpfsMount{Target: "/workspace", SizeBytes: 512 << 20}), "the defaults")
}
