package dockerdriver

import (
	"context"
	"slices"
)

// Runtimes reports the names of the daemon's OCI runtimes (docker info), sorted.
func (d *Docker) Runtimes(ctx context.Context) ([]string, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return nil, d.classify(err, PhaseConnect, "")
	}
	names := make([]string, 0, len(info.Runtimes))
	for name := range info.Runtimes {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}
