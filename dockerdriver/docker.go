package dockerdriver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/docker/docker/client"
	"github.com/go-logr/logr"
)

// Options configure the real driver.
type Options struct {
	// Node is the agent's node name, written on everything the driver creates and used to filter what it
	// sees. Required.
	Node string
	// Host overrides DOCKER_HOST (e.g. unix:///var/run/docker.sock or tcp://127.0.0.1:2375).
	Host string
	// Log receives the driver's own structured logs (event stream reconnects). Optional.
	Log logr.Logger
	// HostVolumes reads an Execution's output on its run volume's host side when that volume's mount is
	// visible there, instead of through the archive API (docker_supervise_host.go); set it when
	// hostvolume.Access says this process may.
	HostVolumes bool
}

// Docker is the Driver backed by a real Docker daemon.
type Docker struct {
	cli   *client.Client
	node  string
	log   logr.Logger
	locks keyLock // ensures of one name, one at a time
	// hostVolumes is Options.HostVolumes.
	hostVolumes bool
	// seesHostPIDs is set once a process the daemon listed was found in the agent's /proc in its container's
	// cgroup: the agent shares the daemon's PID namespace, and an exec's leftovers are then found in /proc
	// rather than by asking the daemon (docker_exec_session.go).
	seesHostPIDs atomic.Bool
	// supervisors caches the supervisor binary by image (docker_supervise_files.go).
	supervisorMu sync.Mutex
	supervisors  map[string][]byte
}

var _ Driver = (*Docker)(nil)

// New connects to the daemon named by DOCKER_HOST (or Options.Host), negotiates the API version and pings
// it, so that a daemon that is not there is reported at once and in words a person can act on.
func New(ctx context.Context, opts Options) (*Docker, error) {
	if opts.Node == "" {
		return nil, NewError(KindInvalidSpec, PhaseConnect, "", "a node name is required")
	}
	clientOpts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if opts.Host != "" {
		clientOpts = append(clientOpts, client.WithHost(opts.Host))
	}
	cli, err := client.NewClientWithOpts(clientOpts...)
	if err != nil {
		return nil, NewError(KindInvalidSpec, PhaseConnect, "", "the Docker host setting (DOCKER_HOST) is not valid")
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	d := &Docker{cli: cli, node: opts.Node, log: log, hostVolumes: opts.HostVolumes}
	if _, err := d.Ping(ctx); err != nil {
		_ = cli.Close()
		return nil, err
	}
	return d, nil
}

// Close releases the client's connections.
func (d *Docker) Close() error {
	if err := d.cli.Close(); err != nil {
		return fmt.Errorf("closing the Docker client: %w", err)
	}
	return nil
}

// Node is the node name the driver labels and filters by.
func (d *Docker) Node() string { return d.node }

// Ping checks the daemon and reports its version and the negotiated API version.
func (d *Docker) Ping(ctx context.Context) (Version, error) {
	if _, err := d.cli.Ping(ctx); err != nil {
		return Version{}, d.classify(err, PhaseConnect, "")
	}
	v, err := d.cli.ServerVersion(ctx)
	if err != nil {
		return Version{}, d.classify(err, PhaseConnect, "")
	}
	return Version{Server: v.Version, APIVersion: d.cli.ClientVersion()}, nil
}
