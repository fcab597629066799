package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
	"github.com/dockside-dev/dockside/internal/dataplane"
	"github.com/dockside-dev/dockside/internal/egress"
	"github.com/dockside-dev/dockside/internal/imagegc"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// settings is what the agent's flags set.
type settings struct {
	opts          agent.Options
	dockerHost    string
	metricsSecure bool
	zap           zap.Options
}

// bindFlags registers every flag of the agent on fs, so that main and the test of docs/agent.md see one set.
func bindFlags(fs *flag.FlagSet, s *settings) {
	fs.StringVar(&s.opts.Node, "node-name", strings.ToLower(hostname()), "name of this agent's node: it acts on Sandboxes with this spec.nodeName and labels its Docker objects with it")
	fs.StringVar(&s.dockerHost, "docker-host", "", "Docker daemon to drive (default $DOCKER_HOST, else the local socket)")
	fs.StringVar(&s.opts.MetricsBindAddress, "metrics-bind-address", "0", "address of the Prometheus metrics endpoint, e.g. :8443; \"0\" disables it, so that several agents on one machine never collide")
	fs.BoolVar(&s.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS to callers that the API server authenticates and authorizes (the ClusterRole dockside-metrics-reader); false serves plain HTTP to anyone, allowed only on a loopback address such as 127.0.0.1:8080")
	fs.StringVar(&s.opts.MetricsCertDir, "metrics-cert-path", "", "folder of the metrics endpoint's certificate and key, reloaded when they change; \"\" makes a self-signed one at start")
	fs.StringVar(&s.opts.MetricsCertName, "metrics-cert-name", "tls.crt", "file name of the metrics certificate in --metrics-cert-path")
	fs.StringVar(&s.opts.MetricsKeyName, "metrics-cert-key", "tls.key", "file name of the metrics key in --metrics-cert-path")
	fs.StringVar(&s.opts.HealthProbeBindAddress, "health-probe-bind-address", "0", "address of /healthz and /readyz, e.g. 127.0.0.1:9465; \"0\" disables it")
	fs.IntVar(&s.opts.Capacity, "capacity", agent.DefaultCapacity, "most Sandboxes this node holds; each counts until it is deleted (a finished run too: it keeps its workspace)")
	fs.Func("allocatable-memory", "most memory the Sandboxes of this node hold in all, their memory limits and workspaces (e.g. 20Gi); default: the host's memory less a tenth of it, at least 1Gi", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("not a quantity of bytes like 20Gi: %w", err)
		}
		if q.Sign() <= 0 {
			return fmt.Errorf("must be more than 0, not %s", v)
		}
		s.opts.AllocatableMemory = q.Value()
		return nil
	})
	s.opts.MaxImageBytes = agent.DefaultMaxImageBytes
	fs.Func("max-image-size", "most disk one image may take on this node, unpacked (e.g. 20Gi; 0 sets no cap): a pull stops as soon as the compressed layers the registry announces pass it, an image pulled larger is removed again, and a Sandbox needing either, or a larger image already on the node, fails with reason ImageTooLarge (default 20Gi)", func(v string) error {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("not a quantity of bytes like 20Gi: %w", err)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("must be 0 (no cap) or more, not %s", v)
		}
		s.opts.MaxImageBytes = q.Value()
		return nil
	})
	fs.IntVar(&s.opts.ImageGC.HighPercent, "image-gc-high-threshold", imagegc.DefaultHighPercent, "percent of the file system of Docker's data root (--image-gc-filesystem) in use above which images no container uses are removed, least recently used first; 100 turns image garbage collection off")
	fs.IntVar(&s.opts.ImageGC.LowPercent, "image-gc-low-threshold", imagegc.DefaultLowPercent, "percent in use that image garbage collection brings the file system down to")
	fs.DurationVar(&s.opts.ImageGC.MinAge, "image-minimum-gc-age", imagegc.DefaultMinAge, "image garbage collection never removes an image a container used, or the agent first saw, less long ago")
	fs.StringVar(&s.opts.ImageGC.Filesystem, "image-gc-filesystem", "/var/lib/docker/volumes", "a path, as the agent sees it, on the file system of Docker's data root, whose use image garbage collection watches (the DaemonSet mounts /var/lib/docker/volumes)")
	fs.Func("node-pids", "most processes and threads the host holds; a tenth of them (at least 1024) is kept for the host, no container may ask for more than the rest, and the node's pids limits add up to at most the rest times --pids-overcommit; default: the least of the host's /proc/sys/kernel/pid_max and threads-max", func(v string) error {
		return positive(v, &s.opts.NodePids)
	})
	fs.Func("node-cpus", "the host's number of CPUs: no container may ask for more, and the node's CPU limits add up to at most this times --cpu-overcommit; default: Docker's NCPU", func(v string) error {
		return positive(v, &s.opts.NodeCPUs)
	})
	fs.Float64Var(&s.opts.PidsOvercommit, "pids-overcommit", agent.DefaultPidsOvercommit, "how many times the host's pids (less its reserve) the pids limits of the node's Sandboxes may add up to")
	fs.Float64Var(&s.opts.CPUOvercommit, "cpu-overcommit", agent.DefaultCPUOvercommit, "how many times the host's CPUs the CPU limits of the node's Sandboxes may add up to (a CPU limit is a ceiling, not a reservation)")
	fs.BoolVar(&s.opts.RequireDigest, "require-digest", false, "run only images pinned by digest (name@sha256:...)")
	fs.BoolVar(&s.opts.AllowNoSeccomp, "allow-no-seccomp", false, "run even when the Docker daemon applies no seccomp profile (sandboxes can then make every system call of the host's kernel); without it the agent refuses to start on such a daemon")
	fs.BoolVar(&s.opts.AllowRoot, "allow-root", false, "run the containers of Sandboxes and SandboxServices that ask for it (runAsRoot: true) as root, still without capabilities; without it they fail with reason RootNotAllowed")
	fs.BoolVar(&s.opts.RefuseUnrestricted, "refuse-unrestricted", false, "fail Sandboxes of network mode Unrestricted on this node with reason UnrestrictedNotAllowed, whatever their namespace allows")
	fs.Func("default-runtime", "runtime of the containers of Sandboxes and SandboxServices that name none (spec.runtime): runc, or gVisor, which the Docker daemon must then offer (--gvisor-runtime-name); default runc", func(v string) error {
		switch rt := dsv1alpha1.Runtime(v); rt {
		case dsv1alpha1.RuntimeRunc, dsv1alpha1.RuntimeGVisor:
			s.opts.DefaultRuntime = rt
			return nil
		}
		return fmt.Errorf("must be runc or gVisor, not %q", v)
	})
	fs.StringVar(&s.opts.GVisorRuntimeName, "gvisor-runtime-name", runtimes.DefaultGVisorName, "name the Docker daemon knows gVisor's runsc by (daemon.json's runtimes); where docker info lists it, the node offers runtime gVisor and says so on its Lease")
	fs.StringVar(&s.opts.HolderImage, "holder-image", agent.DefaultHolderImage, "image of the container that keeps each workspace alive; it must be present on the Docker host")
	fs.BoolVar(&s.opts.LeaderElection, "leader-elect", true, "hold the Lease dockside-agent-<node-name>, so that two agents never act for one node")
	fs.StringVar(&s.opts.LeaseNamespace, "lease-namespace", agent.DefaultLeaseNamespace, "namespace of the node's Lease")
	fs.DurationVar(&s.opts.NodeLostAfter, "node-lost-after", agent.DefaultNodeLostAfter, "how long another node's Lease may go unrenewed before its Sandboxes are marked NodeLost (Ready Unknown); longer than the Lease's duration (15s). One live agent writes it: the one whose node name sorts first")
	fs.StringVar(&s.opts.CheckpointDir, "checkpoint-dir", agent.DefaultCheckpointDir, "folder of the node's Checkpoint archives (kept in <dir>/<node-name>); it must be writable; \"\" turns Checkpoints and restores off")
	fs.Int64Var(&s.opts.CheckpointStoreBytes, "checkpoint-store-bytes", agent.DefaultCheckpointStoreBytes, "most bytes the node's Checkpoint archives, and captures under way, take on disk; a Checkpoint that could pass it fails with reason StoreFull; 0 takes the default, and there is no unlimited setting")
	fs.Int64Var(&s.opts.CheckpointBytesPerNamespace, "checkpoint-bytes-per-namespace", 0, "most bytes the Checkpoint archives of one namespace, and its captures under way, take in this node's store; a Checkpoint that would pass it fails with reason NamespaceCheckpointQuotaExceeded; 0 sets no cap (--checkpoint-store-bytes still bounds them all)")
	fs.StringVar(&s.opts.CheckpointRegistry, "checkpoint-registry", "", "OCI registry repository, host[:port]/path, that Checkpoint archives are pushed to and pulled from, so that a Checkpoint restores on any node and outlives the node that took it; \"\" keeps archives on their node (docs/design/checkpoints.md)")
	fs.StringVar(&s.opts.CheckpointRegistrySecret, "checkpoint-registry-secret", "", "namespace/name of a kubernetes.io/dockerconfigjson Secret with the checkpoint registry's credentials, read at startup; \"\" talks to the registry anonymously")
	fs.BoolVar(&s.opts.CheckpointRegistryPlainHTTP, "checkpoint-registry-plain-http", false, "talk plain HTTP to the checkpoint registry; only allowed to an address in 127.0.0.0/8")
	fs.IntVar(&s.opts.MaxExecOutputBytes, "max-exec-output-bytes", dsv1alpha1.MaxExecutionOutputBytes, "node-wide ceiling of an Execution's maxOutputBytes, per stream (at most 262144)")
	fs.StringVar(&s.opts.TopologyPool, "topology-pool", agent.DefaultTopologyPool, "IPv4 range from which the networks of Sandboxes with services get their /28 subnets (4096 in a /16); agents sharing one Docker daemon are best given disjoint ranges")
	fs.Float64Var(&s.opts.APIQPS, "kube-api-qps", agent.DefaultAPIQPS, "requests per second the agent makes to the API server, all its clients together, so that a node coming back with hundreds of Sandboxes spreads its writes; the Lease's renewals have a limit of their own")
	fs.IntVar(&s.opts.APIBurst, "kube-api-burst", agent.DefaultAPIBurst, "requests the agent may make at once above --kube-api-qps")
	fs.DurationVar(&s.opts.MinBackoff, "min-retry-backoff", agent.DefaultMinBackoff, "first wait before a pass that failed (an API server or Docker that did not answer) is made again; each failure of the same object in a row doubles it")
	fs.DurationVar(&s.opts.MaxBackoff, "max-retry-backoff", agent.DefaultMaxBackoff, "longest wait between tries of a pass that keeps failing, e.g. through an API outage")
	fs.DurationVar(&s.opts.SweepPeriod, "sweep-period", time.Minute, "how often Docker is looked over for orphans and missed events")
	fs.IntVar(&s.opts.EgressProxyPort, "egress-proxy-port", agent.DefaultEgressProxyPort, "port of the egress proxy served on the gateway of each Isolated bridge, the only way out of one (docs/egress.md); 0 serves none, and Isolated Sandboxes then reach nothing outside")
	fs.Func("egress-permit", "an address range (CIDR) the egress proxy may connect to although it is private, loopback, link-local or this host's own, e.g. an internal package mirror's; repeat for more", func(v string) error {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return fmt.Errorf("not a CIDR range: %w", err)
		}
		s.opts.EgressPermit = append(s.opts.EgressPermit, p.Masked())
		return nil
	})
	fs.BoolVar(&s.opts.EgressIPv6, "egress-ipv6", false, "let the egress proxy connect to public IPv6 addresses; without it every IPv6 destination is refused (ForbiddenAddress) but those inside an --egress-permit range")
	fs.IntVar(&s.opts.EgressLimits.MaxConnsPerSandbox, "egress-max-conns-per-sandbox", egress.DefaultMaxConnsPerSandbox, "connections one Sandbox, all its containers together, may hold open through the egress proxy; more are refused TooManyConnections")
	fs.IntVar(&s.opts.EgressLimits.MaxConns, "egress-max-conns", egress.DefaultMaxConns, "connections the egress proxy holds open for the whole node, a bound on the agent's descriptors; more are refused TooManyConnections")
	fs.DurationVar(&s.opts.EgressLimits.IdleTimeout, "egress-idle-timeout", egress.DefaultIdleTimeout, "a tunnel or forwarded request of the egress proxy through which nothing moved, either way, for this long is closed")
	fs.DurationVar(&s.opts.EgressLimits.MaxDuration, "egress-max-duration", egress.DefaultMaxDuration, "a tunnel or forwarded request of the egress proxy is closed this long after its request, whatever still moves")
	fs.BoolVar(&s.opts.HostFirewall, "host-firewall", true, "install the nftables table that drops what Dockside's bridges send to this host, except connections to the egress proxy (needs CAP_NET_ADMIN; without it the agent warns loudly and goes on)")
	fs.StringVar(&s.opts.Dataplane.BindAddress, "dataplane-bind-address", "", "address of the data plane's HTTPS listener (exec on Sandboxes through the API server's aggregated group subresources.dockside.dev), e.g. :9443; \"\" serves none")
	fs.StringVar(&s.opts.Dataplane.CertDir, "dataplane-cert-dir", "", "folder with the data plane's serving tls.crt and tls.key (naming --dataplane-server-name) and ca.crt, the agents' CA (of that certificate and of every agent's peer certificate) and the APIService's caBundle; each is read again when it changes")
	fs.StringVar(&s.opts.Dataplane.PeerCertDir, "dataplane-peer-cert-dir", "", "folder with peer.crt and peer.key, this agent's own client certificate towards other agents (common name dockside-agent:<node>, signed by the agents' CA); \"\" is --dataplane-cert-dir; without one the agent forwards no call to another")
	fs.StringVar(&s.opts.Dataplane.AdvertiseAddress, "dataplane-advertise-address", "", "host:port at which other agents reach this one's data plane, published on the node's Lease so that a call for this node's Sandboxes landing elsewhere is forwarded here; \"\" publishes none")
	fs.StringVar(&s.opts.Dataplane.ServerName, "dataplane-server-name", agent.DefaultDataplaneServerName, "DNS name every agent's data plane certificate holds: the APIService's Service, <name>.<namespace>.svc")
	fs.DurationVar(&s.opts.Dataplane.Limits.HeaderTimeout, "dataplane-header-timeout", dataplane.DefaultHeaderTimeout, "a data plane connection that has not finished its TLS handshake, with a client certificate of the front proxy or of an agent, and sent its request's headers this long after it opened is closed")
	fs.DurationVar(&s.opts.Dataplane.Limits.IdleTimeout, "dataplane-idle-timeout", dataplane.DefaultIdleTimeout, "a data plane keep-alive connection waiting this long for its next request is closed; streams (exec, port-forward, followed output) are not idle")
	fs.IntVar(&s.opts.Dataplane.Limits.MaxConnections, "dataplane-max-connections", dataplane.DefaultMaxConnections, "connections the data plane holds open at once, streams included; one more is closed as soon as it is accepted")
	fs.IntVar(&s.opts.Dataplane.Limits.MaxConnectionsPerSource, "dataplane-max-connections-per-source", dataplane.DefaultMaxConnectionsPerSource, "connections one IP address holds open to the data plane at once (every call through the API server comes from one of its addresses); one more is closed as soon as it is accepted")
	// --kubeconfig: $KUBECONFIG, then ~/.kube/config, then in-cluster (controller-runtime reads it in GetConfig).
	config.RegisterFlags(fs)
	// Stack traces only for panics: every error the agent logs says what happened in its message, and a trace
	// under a known condition at start-up reads as a crash. --zap-stacktrace-level brings them back.
	s.zap.StacktraceLevel = zapcore.DPanicLevel
	s.zap.BindFlags(fs)
}

func hostname() string {
	name, _ := os.Hostname()
	return name
}

// positive parses a flag's whole number, more than 0, into n.
func positive[T int | int64](v string, n *T) error {
	parsed, err := strconv.ParseInt(v, 10, 64)
	if err != nil || parsed <= 0 {
		return fmt.Errorf("must be a whole number more than 0, not %q", v)
	}
	*n = T(parsed)
	return nil
}
