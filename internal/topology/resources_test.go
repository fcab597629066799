package topology

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestLimits(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Limits(dsv1alpha1.Resources{})).To(Equal(Limits(dsv1alpha1.Resources{
		CPU: resource.MustParse("1"), Memory: resource.MustParse("512Mi"), Pids: 256,
	})), "defaults where a field was left out")
	got := Limits(dsv1alpha1.Resources{CPU: resource.MustParse("250m"), Memory: resource.MustParse("64Mi"), Pids: 32})
	g.Expect(got.NanoCPUs).To(BeEquivalentTo(250_000_000))
	g.Expect(got.MemoryBytes).To(BeEquivalentTo(64 << 20))
	g.Expect(got.PIDs).To(BeEquivalentTo(32))
	g.Expect(MountPath(dsv1alpha1.Workspace{MountPath: "/data/"})).To(Equal("/data"))
}

func writable(size string) dsv1alpha1.RootFilesystem {
	return dsv1alpha1.RootFilesystem{Mode: dsv1alpha1.RootFilesystemWritable, Size: ptr.To(resource.MustParse(size))}
}

func TestWritableRootBytes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(WritableRootBytes(dsv1alpha1.SandboxSpec{})).To(BeZero())
	g.Expect(WritableRootBytes(dsv1alpha1.SandboxSpec{RootFilesystem: dsv1alpha1.RootFilesystem{Mode: dsv1alpha1.RootFilesystemReadOnly}})).To(BeZero())
	g.Expect(WritableRootBytes(dsv1alpha1.SandboxSpec{RootFilesystem: writable("256Mi")})).To(BeEquivalentTo(256 << 20))
	g.Expect(WritableRootBytes(dsv1alpha1.SandboxSpec{RootFilesystem: dsv1alpha1.RootFilesystem{Mode: dsv1alpha1.RootFilesystemWritable}})).
		To(BeZero(), "no size, which validation refuses: never an uncapped layer")
}
