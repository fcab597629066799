package dockerdriver

import "context"

// Security reports the confinement the daemon applies to every container (docker info).
func (d *Docker) Security(ctx context.Context) (SecurityInfo, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return SecurityInfo{}, d.classify(err, PhaseConnect, "")
	}
	return SecurityInfo{Options: info.SecurityOptions}, nil
}
