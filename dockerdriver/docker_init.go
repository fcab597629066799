package dockerdriver

import "context"

// Init reports the daemon's init binary (docker info).
func (d *Docker) Init(ctx context.Context) (InitInfo, error) {
	info, err := d.cli.Info(ctx)
	if err != nil {
		return InitInfo{}, d.classify(err, PhaseConnect, "")
	}
	return InitInfo{Binary: info.InitBinary, Commit: info.InitCommit.ID}, nil
}
