// Command dockside-agent is the Dockside node agent: it converges the Sandboxes bound to its node onto one
// Docker daemon and binds unbound Sandboxes to the node while it has room. Run one per Docker host (or
// several on one daemon with different --node-name values); a Lease per node keeps a second agent for the
// same node waiting until the first stops.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/internal/hostvolume"
	"github.com/dockside-dev/dockside/internal/tracing"
	"github.com/dockside-dev/dockside/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dockside-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	var set settings
	bindFlags(flag.CommandLine, &set)
	flag.Parse()
	opts := set.opts
	opts.MetricsPlainHTTP = !set.metricsSecure
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&set.zap)))
	log := ctrl.Log.WithName("agent")

	ctx := ctrl.SetupSignalHandler()
	stopTracing, err := tracing.Setup(ctx, opts.Node)
	if err != nil {
		return fmt.Errorf("setting up tracing (docs/tracing.md): %w", err)
	}
	defer flushTraces(stopTracing, log)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes API server to talk to (set --kubeconfig or $KUBECONFIG): %w", err)
	}
	driver, err := dd.New(ctx, dd.Options{Node: opts.Node, Host: set.dockerHost, Log: ctrl.Log.WithName("docker"),
		HostVolumes: hostvolume.Access()})
	if err != nil {
		return fmt.Errorf("connecting to Docker: %w", err)
	}
	defer driver.Close()
	if err := checkHolderImage(ctx, driver, opts.HolderImage); err != nil {
		return err
	}
	opts.Driver = driver
	mgr, err := agent.New(ctx, cfg, opts)
	if err != nil {
		return fmt.Errorf("setting up the agent: %w", err)
	}
	log.Info("Starting", "version", version.String(), "node", opts.Node, "capacity", opts.Capacity, "requireDigest", opts.RequireDigest, "maxImageBytes", opts.MaxImageBytes, "allowRoot", opts.AllowRoot,
		"lease", opts.LeaseNamespace+"/"+agent.LeaseName(opts.Node))
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the agent: %w", err)
	}
	log.Info("Stopped")
	return nil
}

// flushTraces sends the spans still batched when the agent stops, for at most a few seconds: a collector
// that does not answer must not hold the agent's exit.
func flushTraces(stop func(context.Context) error, log logr.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Info("Could not send the last spans", "error", err.Error())
	}
}

// checkHolderImage fails early, in words a person can act on, when the holder image is missing: no
// Sandbox could keep a workspace without it, and the agent never pulls.
func checkHolderImage(ctx context.Context, driver dd.Driver, ref string) error {
	img, err := driver.InspectImage(ctx, ref)
	if err != nil {
		return fmt.Errorf("inspecting the holder image %s: %w", ref, err)
	}
	if !img.Exists {
		return fmt.Errorf("the workspace holder image %s is not on this Docker host; build it with `make images` or name another with --holder-image", ref)
	}
	return nil
}
