package topology

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

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
	g.Expect(WithTmp(nil, 64<<20, "/workspace")).To(Equal([]dd.TmpfsMount{{Target: "/tmp", SizeBytes: 16 << 20}}))
	g.Expect(WithTmp([]dd.TmpfsMount{data}, 64<<20)).To(Equal([]dd.TmpfsMount{data, {Target: "/tmp", SizeBytes: 16 << 20}}))
	own := dd.TmpfsMount{Target: "/tmp", SizeBytes: 1 << 30}
	g.Expect(WithTmp([]dd.TmpfsMount{own}, 64<<20)).To(Equal([]dd.TmpfsMount{own}), "a scratch mount at /tmp replaces it")
	g.Expect(WithTmp(nil, 64<<20, "/tmp")).To(BeEmpty(), "so does a workspace there")
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
