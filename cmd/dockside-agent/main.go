// Command dockside-agent is the Dockside node agent: it converges the Sandboxes bound to its node onto one
// Docker daemon and binds unbound Sandboxes to the node while it has room. Run one per Docker host (or
// several on one daemon with different --node-name values); a Lease per node keeps a second agent for the
// same node waiting until the first stops.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/agent"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dockside-agent:", err)
		os.Exit(1)
	}
}

func run() error {
	hostname, _ := os.Hostname()
	var opts agent.Options
	var dockerHost string
	// --kubeconfig is registered by controller-runtime (default: $KUBECONFIG, then ~/.kube/config, then
	// in-cluster).
	flag.StringVar(&opts.Node, "node-name", strings.ToLower(hostname), "name of this agent's node: it acts on Sandboxes with this spec.nodeName and labels its Docker objects with it")
	flag.StringVar(&dockerHost, "docker-host", "", "Docker daemon to drive (default $DOCKER_HOST, else the local socket)")
	flag.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", "0", "address of the Prometheus metrics endpoint, e.g. :8443; \"0\" disables it, so that several agents on one machine never collide")
	var metricsSecure bool
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to callers that the API server authenticates and authorizes (the ClusterRole dockside-metrics-reader); false serves plain HTTP to anyone, allowed only on a loopback address such as 127.0.0.1:8080")
	flag.StringVar(&opts.MetricsCertDir, "metrics-cert-path", "", "folder of the metrics endpoint's certificate and key, reloaded when they change; \"\" makes a self-signed one at start")
	flag.StringVar(&opts.MetricsCertName, "metrics-cert-name", "tls.crt", "file name of the metrics certificate in --metrics-cert-path")
	flag.StringVar(&opts.MetricsKeyName, "metrics-cert-key", "tls.key", "file name of the metrics key in --metrics-cert-path")
	flag.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", "0", "address of /healthz and /readyz, e.g. 127.0.0.1:9465; \"0\" disables it")
	flag.IntVar(&opts.Capacity, "capacity", agent.DefaultCapacity, "most Sandboxes this node holds; each counts until it is deleted (a finished run too: it keeps its workspace)")
	flag.Func("allocatable-memory", "most memory the Sandboxes of this node hold in all, their memory limits and workspaces (e.g. 20Gi); default: the host's memory less a tenth of it, at least 1Gi", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("not a quantity of bytes like 20Gi: %w", err)
		}
		if q.Sign() <= 0 {
			return fmt.Errorf("must be more than 0, not %s", v)
		}
		opts.AllocatableMemory = q.Value()
		return nil
	})
	flag.BoolVar(&opts.RequireDigest, "require-digest", false, "run only images pinned by digest (name@sha256:...)")
	flag.BoolVar(&opts.AllowNoSeccomp, "allow-no-seccomp", false, "run even when the Docker daemon applies no seccomp profile (sandboxes can then make every system call of the host's kernel); without it the agent refuses to start on such a daemon")
	flag.BoolVar(&opts.AllowRoot, "allow-root", false, "run the containers of Sandboxes and SandboxServices that ask for it (runAsRoot: true) as root, still without capabilities; without it they fail with reason RootNotAllowed")
	flag.StringVar(&opts.HolderImage, "holder-image", agent.DefaultHolderImage, "image of the container that keeps each workspace alive; it must be present on the Docker host")
	flag.BoolVar(&opts.LeaderElection, "leader-elect", true, "hold the Lease dockside-agent-<node-name>, so that two agents never act for one node")
	flag.StringVar(&opts.LeaseNamespace, "lease-namespace", agent.DefaultLeaseNamespace, "namespace of the node's Lease")
	flag.DurationVar(&opts.NodeLostAfter, "node-lost-after", agent.DefaultNodeLostAfter, "how long another node's Lease may go unrenewed before its Sandboxes are marked NodeLost (Ready Unknown); longer than the Lease's duration (15s). One live agent writes it: the one whose node name sorts first")
	flag.StringVar(&opts.CheckpointDir, "checkpoint-dir", agent.DefaultCheckpointDir, "folder of the node's Checkpoint archives (kept in <dir>/<node-name>); it must be writable; \"\" turns Checkpoints and restores off")
	flag.Int64Var(&opts.CheckpointStoreBytes, "checkpoint-store-bytes", agent.DefaultCheckpointStoreBytes, "most bytes the node's Checkpoint archives, and captures under way, take on disk; a Checkpoint that could pass it fails with reason StoreFull; 0 takes the default, and there is no unlimited setting")
	flag.Int64Var(&opts.CheckpointBytesPerNamespace, "checkpoint-bytes-per-namespace", 0, "most bytes the Checkpoint archives of one namespace, and its captures under way, take in this node's store; a Checkpoint that would pass it fails with reason NamespaceCheckpointQuotaExceeded; 0 sets no cap (--checkpoint-store-bytes still bounds them all)")
	flag.StringVar(&opts.CheckpointRegistry, "checkpoint-registry", "", "OCI registry repository, host[:port]/path, that Checkpoint archives are pushed to and pulled from, so that a Checkpoint restores on any node and outlives the node that took it; \"\" keeps archives on their node (docs/architecture.md, \"Checkpoints\")")
	flag.StringVar(&opts.CheckpointRegistrySecret, "checkpoint-registry-secret", "", "namespace/name of a kubernetes.io/dockerconfigjson Secret with the checkpoint registry's credentials, read at startup; \"\" talks to the registry anonymously")
	flag.BoolVar(&opts.CheckpointRegistryPlainHTTP, "checkpoint-registry-plain-http", false, "talk plain HTTP to the checkpoint registry; only allowed to an address in 127.0.0.0/8")
	flag.IntVar(&opts.MaxExecOutputBytes, "max-exec-output-bytes", dsv1alpha1.MaxExecutionOutputBytes, "node-wide ceiling of an Execution's maxOutputBytes, per stream (at most 262144)")
	flag.StringVar(&opts.TopologyPool, "topology-pool", agent.DefaultTopologyPool, "IPv4 range from which the networks of Sandboxes with services get their /28 subnets (4096 in a /16); agents sharing one Docker daemon are best given disjoint ranges")
	flag.DurationVar(&opts.SweepPeriod, "sweep-period", time.Minute, "how often Docker is looked over for orphans and missed events")
	flag.IntVar(&opts.EgressProxyPort, "egress-proxy-port", agent.DefaultEgressProxyPort, "port of the egress proxy served on the gateway of each Isolated bridge, the only way out of one (docs/egress.md); 0 serves none, and Isolated Sandboxes then reach nothing outside")
	flag.Func("egress-permit", "an address range (CIDR) the egress proxy may connect to although it is private, loopback, link-local or this host's own, e.g. an internal package mirror's; repeat for more", func(v string) error {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return fmt.Errorf("not a CIDR range: %w", err)
		}
		opts.EgressPermit = append(opts.EgressPermit, p.Masked())
		return nil
	})
	flag.BoolVar(&opts.HostFirewall, "host-firewall", true, "install the nftables table that drops what Dockside's bridges send to this host, except connections to the egress proxy (needs CAP_NET_ADMIN; without it the agent warns loudly and goes on)")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	opts.MetricsPlainHTTP = !metricsSecure
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("agent")

	ctx := ctrl.SetupSignalHandler()
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes API server to talk to (set --kubeconfig or $KUBECONFIG): %w", err)
	}
	driver, err := dd.New(ctx, dd.Options{Node: opts.Node, Host: dockerHost, Log: ctrl.Log.WithName("docker")})
	if err != nil {
		return err
	}
	defer driver.Close()
	if err := checkHolderImage(ctx, driver, opts.HolderImage); err != nil {
		return err
	}
	opts.Driver = driver
	mgr, err := agent.New(ctx, cfg, opts)
	if err != nil {
		return err
	}
	log.Info("Starting", "node", opts.Node, "capacity", opts.Capacity, "requireDigest", opts.RequireDigest, "allowRoot", opts.AllowRoot,
		"lease", opts.LeaseNamespace+"/"+agent.LeaseName(opts.Node))
	if err := mgr.Start(ctx); err != nil {
		return err
	}
	log.Info("Stopped")
	return nil
}

// checkHolderImage fails early, in words a person can act on, when the holder image is missing: no
// Sandbox could keep a workspace without it, and the agent never pulls.
func checkHolderImage(ctx context.Context, driver dd.Driver, ref string) error {
	img, err := driver.InspectImage(ctx, ref)
	if err != nil {
		return err
	}
	if !img.Exists {
		return fmt.Errorf("the workspace holder image %s is not on this Docker host; build it with `make images` or name another with --holder-image", ref)
	}
	return nil
}
