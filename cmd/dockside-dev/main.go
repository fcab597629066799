// Command dockside-dev is what `make run` and `make stop` call: it starts a local control plane (etcd and
// kube-apiserver built from source), installs the CRDs, writes a kubeconfig, runs the agent and the E2B gateway
// against it until Ctrl-C, and then stops everything it started. `dockside-dev stop` ends a run from another terminal.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dockside-dev/dockside/internal/localcluster"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "stop" {
		fs := flag.NewFlagSet("stop", flag.ExitOnError)
		pidFile := fs.String("pid-file", ".local/run.pids", "processes recorded by the run to stop")
		_ = fs.Parse(os.Args[2:])
		if err := stopRecorded(*pidFile, 30*time.Second); err != nil {
			fail(err)
		}
		return
	}
	cfg, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2) // the flag set has said what was wrong, and the usage
	}
	if err := run(cfg); err != nil {
		fail(err)
	}
}

func run(cfg runConfig) error {
	// A run that was killed outright may have left its control plane behind; end it before starting anew.
	if err := stopRecorded(cfg.pidFile, 30*time.Second); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	opts := cfg.opts
	fmt.Fprintln(os.Stderr, ">> starting etcd and kube-apiserver on loopback, installing CRDs from", opts.CRDDir)
	cp, err := localcluster.Start(opts)
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer stopControlPlane(cp, cfg.pidFile)
	if err := recordChildren(cfg.pidFile); err != nil {
		return err
	}
	for _, node := range cfg.peerNodes {
		if opts.Dataplane == nil {
			break
		}
		if _, err := opts.Dataplane.PeerCertDir(node); err != nil {
			return fmt.Errorf("the data plane's certificates: %w", err)
		}
	}
	var procs []*child
	defer func() { stopChildren(procs) }()
	if argv := cfg.gatewayArgv(cp.Kubeconfig); argv != nil {
		gw, err := startChild("the E2B gateway", cp.Kubeconfig, argv)
		if err != nil {
			return err
		}
		procs = append(procs, gw)
	}
	if len(cfg.agent) > 0 {
		agent, err := startChild("the agent", cp.Kubeconfig, cfg.agent)
		if err != nil {
			return err
		}
		// The agent stops first: it hands its Lease back while the control plane still answers.
		procs = append([]*child{agent}, procs...)
	}
	// Recorded again with the gateway and the agent, so that `dockside-dev stop` ends them too if this run is
	// killed outright.
	if err := recordChildren(cfg.pidFile); err != nil {
		return err
	}
	fmt.Fprint(os.Stderr, cfg.hint(absPath(cp.Kubeconfig)))
	return waitChildren(ctx, procs)
}

func stopControlPlane(cp *localcluster.ControlPlane, pidFile string) {
	fmt.Fprintln(os.Stderr, ">> stopping kube-apiserver and etcd")
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "!! stopping the control plane:", err)
	}
	_ = os.Remove(pidFile)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dockside-dev:", err)
	os.Exit(1)
}
