package dockerdriver

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCapsWritableLayer(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		storage StorageInfo
		can     bool
		why     string // a part of the reason when it cannot
	}{
		{StorageInfo{Driver: "overlay2", BackingFS: "xfs"}, true, ""},
		{StorageInfo{Driver: "btrfs", BackingFS: "btrfs"}, true, ""},
		{StorageInfo{Driver: "zfs", BackingFS: "zfs"}, true, ""},
		{StorageInfo{Driver: "devicemapper", BackingFS: "xfs"}, true, ""},
		{StorageInfo{Driver: "overlay2", BackingFS: "extfs"}, false, "storage driver overlay2 on extfs cannot cap a container's writable layer"},
		{StorageInfo{Driver: "overlay2"}, false, "overlay2 on an unknown file system"},
		{StorageInfo{Driver: "fuse-overlayfs"}, false, "storage driver fuse-overlayfs cannot cap"},
		{StorageInfo{Driver: "vfs", BackingFS: "xfs"}, false, "storage driver vfs on xfs cannot cap"},
		{StorageInfo{Driver: "aufs", BackingFS: "extfs"}, false, "aufs on extfs"},
		{StorageInfo{}, false, "the storage driver is unknown"},
	} {
		can, why := tc.storage.CapsWritableLayer()
		g.Expect(can).To(Equal(tc.can), "%+v", tc.storage)
		if tc.can {
			g.Expect(why).To(BeEmpty())
		} else {
			g.Expect(why).To(ContainSubstring(tc.why))
		}
	}
}

func TestWritableRootRefusal(t *testing.T) {
	g := NewWithT(t)
	extfs := StorageInfo{Driver: "overlay2", BackingFS: "extfs"}
	xfs := StorageInfo{Driver: "overlay2", BackingFS: "xfs"}
	s := validSpec()
	g.Expect(WritableRootRefusal(s, extfs)).To(Succeed(), "a read-only root needs no cap")

	s.WritableRootBytes = 1 << 30
	g.Expect(WritableRootRefusal(s, xfs)).To(Succeed())
	err := WritableRootRefusal(s, extfs)
	g.Expect(IsInvalidSpec(err)).To(BeTrue())
	g.Expect(PhaseOf(err)).To(Equal(PhaseCreate))
	g.Expect(err.Error()).To(ContainSubstring("storage driver overlay2 on extfs"))

	s.WritableRootBytes = -1
	g.Expect(IsInvalidSpec(WritableRootRefusal(s, xfs))).To(BeTrue())
}
