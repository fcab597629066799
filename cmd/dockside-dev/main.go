// Command dockside-dev is what `make run` and `make stop` call: it starts a local control plane (etcd and
// kube-apiserver built from source), installs the CRDs, writes a kubeconfig, runs the agent against it until
// Ctrl-C, and then stops everything it started. `dockside-dev stop` ends a run from another terminal.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/dockside-dev/dockside/internal/controlplane"
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
	// A flag set of our own: controller-runtime registers a global -kubeconfig flag with another meaning.
	fs := flag.NewFlagSet("dockside-dev", flag.ExitOnError)
	opts := controlplane.Options{}
	fs.StringVar(&opts.DataDir, "data-dir", ".local/etcd", "etcd data folder, kept across runs")
	fs.StringVar(&opts.KubeconfigPath, "kubeconfig", ".local/kubeconfig", "where to write the admin kubeconfig")
	fs.StringVar(&opts.CRDDir, "crds", "config/crd/bases", "folder of CRD manifests to install")
	pidFile := fs.String("pid-file", ".local/run.pids", "where to record the processes of this run")
	dp := controlplane.Dataplane{}
	fs.Func("dataplane-port", "loopback port of the agent's data plane, which kube-apiserver proxies subresources.dockside.dev to (the agent's --dataplane-bind-address=127.0.0.1:PORT); 0 sets none up", func(v string) error {
		port, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return fmt.Errorf("not a port: %w", err)
		}
		dp.Port = int32(port)
		return nil
	})
	fs.StringVar(&dp.CertDir, "cert-dir", ".local/pki", "where the front proxy's and the data plane's certificates are made at each start (the agent's --dataplane-cert-dir is its dataplane/ folder)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: dockside-dev [flags] [-- agent command...] | dockside-dev stop [-pid-file F]")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	if dp.Port != 0 {
		opts.Dataplane = &dp
	}
	if err := run(opts, *pidFile, fs.Args()); err != nil {
		fail(err)
	}
}

func run(opts controlplane.Options, pidFile string, agent []string) error {
	// A run that was killed outright may have left its control plane behind; end it before starting anew.
	if err := stopRecorded(pidFile, 30*time.Second); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintln(os.Stderr, ">> starting etcd and kube-apiserver on loopback, installing CRDs from", opts.CRDDir)
	cp, err := controlplane.Start(opts)
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	defer stopControlPlane(cp, pidFile)
	if err := recordChildren(pidFile); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, ">> control plane is up. In another terminal:\n\n    export KUBECONFIG=%s\n\n", absPath(cp.Kubeconfig))
	if len(agent) == 0 {
		<-ctx.Done()
		return nil
	}
	return runAgent(ctx, cp.Kubeconfig, agent)
}

// runAgent runs the agent in the foreground until it exits or the run is interrupted.
func runAgent(ctx context.Context, kubeconfig string, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Fprintln(os.Stderr, ">> starting the agent:", argv)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the agent: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("the agent exited: %w", err)
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, ">> stopping the agent")
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	}
}

func stopControlPlane(cp *controlplane.ControlPlane, pidFile string) {
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
