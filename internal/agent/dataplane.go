package agent

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane"
	"github.com/dockside-dev/dockside/internal/dataplane/files"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/hostvolume"
)

// DataplaneOptions turn on the agent's aggregated API server (docs/design/dataplane.md).
type DataplaneOptions struct {
	// BindAddress is where the data plane listens, host:port; "" serves none.
	BindAddress string
	// CertDir holds tls.crt, tls.key and ca.crt: the serving certificate, which must name ServerName, and
	// the agents' CA, of that certificate and of every agent's peer certificate.
	CertDir string
	// PeerCertDir holds peer.crt and peer.key, this agent's identity towards the other agents (common name
	// dockside-agent:<node>); "" is CertDir.
	PeerCertDir string
	// AdvertiseAddress is how other agents reach this one, host:port, published on the node's Lease (with
	// leader election only); "" publishes none.
	AdvertiseAddress string
	// ServerName is the name every agent's certificate holds: the APIService's Service, <name>.<namespace>.svc.
	ServerName string
	// Limits bound the listener: header and idle timeouts, connection caps in all and per source address.
	Limits dataplane.Limits
}

// DefaultDataplaneServerName is the DNS name of config/dataplane's Service.
const DefaultDataplaneServerName = "dockside-dataplane.dockside-system.svc"

// addDataplane adds the data plane server to the manager when it is configured.
func addDataplane(mgr manager.Manager, opts Options, driver dd.Driver, freezes *handoff.Freezes, idle *handoff.Idle, log logr.Logger) error {
	dp := opts.Dataplane
	if dp.BindAddress == "" {
		return nil
	}
	advertise := dp.AdvertiseAddress
	if !opts.LeaderElection {
		advertise = "" // the address goes on the node's Lease, which only leader election makes
	}
	spool := "" // the system's temporary folder, unless the checkpoint folder (writable, on the node's disk) is there
	if opts.CheckpointDir != "" {
		spool = filepath.Join(opts.CheckpointDir, ".files-spool")
		if err := os.MkdirAll(spool, 0o700); err != nil {
			return fmt.Errorf("the files spool: %w", err)
		}
	}
	// The workspace is read and written on the volume's host side when this process may (files.HostAccess),
	// through the daemon's archive API otherwise (docs/design/dataplane-files.md).
	hostVolumes := hostvolume.Access()
	log.Info("Files in workspaces", "hostSide", hostVolumes)
	srv, err := dataplane.New(dataplane.Options{
		Node: opts.Node, BindAddress: dp.BindAddress, CertDir: dp.CertDir, PeerCertDir: dp.PeerCertDir,
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Sandboxes: mgr.GetCache(), Driver: driver, Freezes: freezes, Idle: idle,
		// An image's own files are no larger than the cap on the image (0, no cap: files' default).
		Files:          &files.Handler{Driver: driver, SpoolDir: spool, MaxSpoolBytes: opts.MaxImageBytes, HostVolumes: hostVolumes},
		LeaseNamespace: opts.LeaseNamespace, LeaseName: LeaseName, AdvertiseAddress: advertise, ServerName: dp.ServerName,
		Limits: dp.Limits,
		Log:    log.WithName("dataplane"),
	})
	if err != nil {
		return fmt.Errorf("the data plane: %w", err)
	}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("adding the data plane: %w", err)
	}
	return nil
}
