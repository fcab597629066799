package fake_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
)

func TestWritableRootOnlyWhereTheStorageCapsIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	s := spec(dsv1alpha1.RolePrimary, "")
	s.WritableRootBytes = 64 << 20

	_, err := f.EnsureContainer(ctx, s)
	g.Expect(dd.IsInvalidSpec(err)).To(BeTrue(), "the fake's default storage, overlay2 on extfs, cannot cap: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("storage driver overlay2 on extfs"))
	g.Expect(f.ObserveContainer(ctx, s.Name)).To(HaveField("Exists", BeFalse()), "nothing was made")

	f.SetStorage(dd.StorageInfo{Driver: "zfs", BackingFS: "zfs"})
	_, err = f.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestReadOnlyRootTakesCopiesOnlyIntoMounts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFake()
	ws, err := f.EnsureVolume(ctx, dd.VolumeSpec{Name: "ws", Owner: owner, Role: dsv1alpha1.RoleWorkspace, SizeBytes: 1 << 20})
	g.Expect(err).NotTo(HaveOccurred())
	s := spec(dsv1alpha1.RolePrimary, "")
	s.Mounts = []dd.VolumeMount{{Volume: ws.Name, Target: "/workspace"}}
	started(g, f, s)

	g.Expect(f.CopyTo(ctx, s.Name, "/workspace", tarball.Of(t, map[string]string{"a.txt": "kept"}))).To(Succeed())
	err = f.CopyTo(ctx, s.Name, "/", tarball.Of(t, map[string]string{"a.txt": "refused"}))
	g.Expect(dd.IsUncertain(err)).To(BeTrue(), "Docker refuses it with a server error: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseCopy))

	writable := spec(dsv1alpha1.RolePrimary, "")
	writable.Name += "-writable"
	writable.WritableRootBytes = 1 << 20
	w := fake.New("node-a")
	w.AddImage(image, dd.ImageInfo{})
	w.SetStorage(dd.StorageInfo{Driver: "btrfs", BackingFS: "btrfs"})
	started(g, w, writable)
	g.Expect(w.CopyTo(ctx, writable.Name, "/", tarball.Of(t, map[string]string{"a.txt": "kept"}))).To(Succeed())
}
