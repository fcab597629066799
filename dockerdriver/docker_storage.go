package dockerdriver

import (
	"context"
)

// Storage reports the daemon's storage driver and its backing file system (docker info).
func (d *Docker) Storage(ctx context.Context) (StorageInfo, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return StorageInfo{}, d.classify(err, PhaseConnect, "")
	}
	s := StorageInfo{Driver: info.Driver}
	for _, kv := range info.DriverStatus {
		if kv[0] == "Backing Filesystem" {
			s.BackingFS = kv[1]
		}
	}
	return s, nil
}

// checkWritableRoot refuses a container asking for a writable root file system (WritableRootBytes) on a
// daemon that cannot cap its writable layer: Docker would refuse the size quota, and the layer must not grow
// unbounded on the node's disk. The daemon is asked each time, as only such containers pay for it.
func (d *Docker) checkWritableRoot(ctx context.Context, spec ContainerSpec) error {
	if spec.WritableRootBytes == 0 {
		return nil
	}
	s, err := d.Storage(ctx)
	if err != nil {
		return err
	}
	return WritableRootRefusal(spec, s)
}
