package dockerdriver

import "fmt"

// StorageInfo is the daemon's storage driver and the file system under it, as docker info reports them.
// They decide whether a container's writable layer can be capped (see CapsWritableLayer).
type StorageInfo struct {
	Driver    string // e.g. overlay2, fuse-overlayfs, zfs
	BackingFS string // e.g. xfs, extfs; empty when the driver reports none
}

// CapsWritableLayer tells whether Docker can give a container's writable layer a size quota
// (HostConfig.StorageOpt size) on this storage, and when it cannot, says why in words naming the driver.
// Docker has the quota on overlay2 over xfs mounted with pquota, and on btrfs, zfs and devicemapper; it
// refuses a container asking for one everywhere else. docker info does not tell whether xfs is mounted
// with pquota, so overlay2 over xfs counts as able: without pquota Docker then refuses the create, which
// the driver reports as an uncertain outcome, and the Sandbox fails at its startup deadline instead of at
// once.
func (s StorageInfo) CapsWritableLayer() (bool, string) {
	switch {
	case s.Driver == "overlay2" && s.BackingFS == "xfs",
		s.Driver == "btrfs", s.Driver == "zfs", s.Driver == "devicemapper":
		return true, ""
	case s.Driver == "overlay2":
		return false, fmt.Sprintf("storage driver overlay2 on %s cannot cap a container's writable layer (it needs xfs mounted with pquota)", orUnknown(s.BackingFS))
	case s.Driver == "":
		return false, "the storage driver is unknown, so a container's writable layer cannot be capped"
	}
	where := ""
	if s.BackingFS != "" {
		where = " on " + s.BackingFS
	}
	return false, fmt.Sprintf("storage driver %s%s cannot cap a container's writable layer (only overlay2 over xfs with pquota, btrfs, zfs and devicemapper can)", s.Driver, where)
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown file system"
	}
	return s
}

// WritableRootRefusal is the InvalidSpec error for a container whose writable root file system (size
// WritableRootBytes) the storage cannot cap, or nil when it asks for none or the storage can cap it.
func WritableRootRefusal(spec ContainerSpec, s StorageInfo) error {
	if spec.WritableRootBytes == 0 {
		return nil
	}
	if spec.WritableRootBytes < 0 {
		return NewError(KindInvalidSpec, PhaseCreate, spec.Name, "a writable root file system needs a positive size")
	}
	if ok, why := s.CapsWritableLayer(); !ok {
		return NewError(KindInvalidSpec, PhaseCreate, spec.Name, "a writable root file system needs a size cap, and "+why)
	}
	return nil
}
