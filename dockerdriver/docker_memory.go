package dockerdriver

import "context"

// HostMemory reports the memory of the daemon's host (docker info's MemTotal), in bytes.
func (d *Docker) HostMemory(ctx context.Context) (int64, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return 0, d.classify(err, PhaseConnect, "")
	}
	return info.MemTotal, nil
}

// HostCPUs reports the number of CPUs of the daemon's host (docker info's NCPU).
func (d *Docker) HostCPUs(ctx context.Context) (int, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return 0, d.classify(err, PhaseConnect, "")
	}
	return info.NCPU, nil
}
