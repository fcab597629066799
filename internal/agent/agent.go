// Package agent assembles the node agent: a controller-runtime manager that holds its node's Lease, caches
// only its node's Sandboxes (and the unbound ones), and runs the Sandbox reconciler, the Docker event pump
// and the sweeper against one Docker daemon. cmd/dockside-agent and the integration tests both build it here.
package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/metered"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/cachetrim"
	"github.com/dockside-dev/dockside/internal/controller/checkpoint"
	"github.com/dockside-dev/dockside/internal/controller/execution"
	"github.com/dockside-dev/dockside/internal/controller/nodelifecycle"
	"github.com/dockside-dev/dockside/internal/controller/sandbox"
	"github.com/dockside-dev/dockside/internal/controller/sandboxclaim"
	"github.com/dockside-dev/dockside/internal/controller/sandboxservice"
	"github.com/dockside-dev/dockside/internal/controller/warmpool"
	"github.com/dockside-dev/dockside/internal/egress"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/hostfirewall"
	"github.com/dockside-dev/dockside/internal/imagegc"
	"github.com/dockside-dev/dockside/internal/imagepuller"
	"github.com/dockside-dev/dockside/internal/nodewatch"
	"github.com/dockside-dev/dockside/internal/runtimes"
)

// Defaults of the agent's options.
const (
	// DefaultCapacity is the most Sandboxes a node holds, like a kubelet's default of 110 pods.
	DefaultCapacity       = 110
	DefaultHolderImage    = "dockside.dev/holder:local"
	DefaultLeaseNamespace = "kube-system"
	DefaultCheckpointDir  = "/var/lib/dockside/checkpoints"
	// DefaultCheckpointStoreBytes bounds the node's Checkpoint archives: room for one capture of the
	// largest workspace (8Gi, 9 GiB and 1 MiB with archive overhead) on a disk that is not the agent's alone.
	DefaultCheckpointStoreBytes = 10 << 30
	// DefaultTopologyPool holds 4096 topology subnets (/28) and stays clear of Docker's default pools
	// (172.17-31.x, 192.168.x), home networks (192.168.x), Kubernetes' usual service and pod ranges
	// (10.0.0.0/16, 10.96.0.0/12, 10.244.0.0/16, k3s' 10.42-43.x, weave's 10.32.0.0/12) and Google Cloud's
	// automatic subnets (10.128.0.0/9).
	DefaultTopologyPool = "10.120.0.0/16"
	// DefaultNodeLostAfter is how long a node's Lease goes unrenewed before its Sandboxes are marked NodeLost:
	// the Lease's duration (15s) and more than two of its renewals on top, so that a slow renewal is no loss.
	DefaultNodeLostAfter = 40 * time.Second
	// DefaultAPIQPS and DefaultAPIBurst limit the agent's requests to the API server, all its clients together
	// (docs/agent.md, "When the API server is out"): 200 Sandboxes whose status changed while the API server
	// was out are written back over some 3 seconds rather than at once.
	DefaultAPIQPS   = 50
	DefaultAPIBurst = 100
	// DefaultMinBackoff and DefaultMaxBackoff bound the per-object backoff of a pass that failed: through an
	// outage each object's pass is tried again at most once a minute.
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = time.Minute
	// DefaultMaxImageBytes is the flag's default cap on one image: many times any toolchain image, far below
	// the disk one image could otherwise take from every tenant of the node.
	DefaultMaxImageBytes = 20 << 30
)

// Options configure one agent. Zero durations take the defaults noted.
type Options struct {
	Node          string    // this agent's node name, a DNS subdomain; required
	Driver        dd.Driver // the node's Docker daemon (the real driver, or the fake in tests); required
	Capacity      int       // most Sandboxes the node holds, finished runs included until deleted; default 110
	RequireDigest bool      // refuse images not pinned by digest
	// MaxImageBytes caps the size of one image on the node (unpacked; a pull stops as soon as the compressed
	// layers announced pass it, and an image pulled larger is removed again); 0, the zero value, sets no cap
	// (the command's flag defaults to DefaultMaxImageBytes). docs/images.md, "How large an image may be".
	MaxImageBytes int64
	// ImageGC removes images no container uses when the file system of Docker's data root fills (docs/images.md,
	// "Garbage collection of images"); its zero value collects nothing (the command's flags default to kubelet's
	// thresholds).
	ImageGC     ImageGCOptions
	HolderImage string // default dockside.dev/holder:local

	// AllocatableMemory is the most bytes of memory the Sandboxes of the node hold in all (their memory limits
	// and workspaces; internal/controller/sandbox/footprint.go); 0 means the host's memory less a reserve of a tenth
	// of it, at least 1 GiB.
	AllocatableMemory int64
	// NodePids is the most processes and threads the host holds; 0 reads the least of pid_max and threads-max
	// from /proc/sys/kernel. A tenth of it (at least 1024) is kept for the host; the rest is what one
	// container may ask for at most, and, times PidsOvercommit (default 1), what the node's pids limits add
	// up to (processes.go).
	NodePids int64
	// NodeCPUs is the host's number of CPUs; 0 asks Docker (NCPU). No container may ask for more; the node's
	// CPU limits add up to at most this times CPUOvercommit (default 32).
	NodeCPUs       int
	PidsOvercommit float64
	CPUOvercommit  float64

	// AllowNoSeccomp lets the agent run on a daemon that applies no seccomp profile; without it New refuses
	// such a daemon (see checkSeccomp).
	AllowNoSeccomp bool
	// AllowRoot runs a Sandbox's or SandboxService's containers as root where they ask for it (runAsRoot);
	// without it such a Sandbox fails with reason RootNotAllowed.
	AllowRoot bool
	// RefuseUnrestricted fails Sandboxes of network mode Unrestricted on this node with reason
	// UnrestrictedNotAllowed (docs/security.md, "Who may go Unrestricted").
	RefuseUnrestricted bool
	// DefaultRuntime is the runtime of the containers of Sandboxes and SandboxServices that name none
	// (spec.runtime): runc (""), or gVisor, which the daemon must then offer under GVisorRuntimeName.
	DefaultRuntime dsv1alpha1.Runtime
	// GVisorRuntimeName is the name the Docker daemon knows gVisor's runsc by (daemon.json's runtimes);
	// default runsc. Where the daemon lists it, the node offers gVisor.
	GVisorRuntimeName string

	// LeaderElection holds the Lease LeaseName(Node) in LeaseNamespace (default kube-system), so that two
	// agents never act for one node at once; the second waits until the first lets go.
	LeaderElection bool
	LeaseNamespace string
	LeaseDuration  time.Duration // default 15s
	RenewDeadline  time.Duration // default 10s
	RetryPeriod    time.Duration // default 2s
	// NodeLostAfter is how long another node's Lease may go unrenewed before this agent, if it is the writer,
	// marks that node's Sandboxes NodeLost (internal/controller/nodelifecycle); default 40s, longer than the Lease's
	// duration. Only with LeaderElection (the Leases are what it watches).
	NodeLostAfter time.Duration

	// APIQPS and APIBurst limit the requests of every client of the agent together (one token bucket); the
	// Lease's renewals have a bucket of their own. Defaults DefaultAPIQPS and DefaultAPIBurst.
	APIQPS   float64
	APIBurst int

	MetricsBindAddress     string // "0" (the default) disables
	HealthProbeBindAddress string // "0" (the default) disables

	// MetricsPlainHTTP serves /metrics over plain HTTP to anyone, allowed on a loopback address only (make
	// run); without it they are served over HTTPS to callers the API server authenticates and authorizes
	// (metrics_serving.go).
	MetricsPlainHTTP bool
	// MetricsCertDir holds the HTTPS certificate and key of /metrics (MetricsCertName, default tls.crt, and
	// MetricsKeyName, default tls.key), e.g. a cert-manager Secret's mount; "": a self-signed one made at start.
	MetricsCertDir  string
	MetricsCertName string
	MetricsKeyName  string

	SweepPeriod time.Duration // orphan and drift sweep of Docker; default 1m
	// RuntimesPeriod: how often the agent reads its Docker's runtimes again (one docker info); default 1m.
	RuntimesPeriod time.Duration
	BindRetry      time.Duration // an agent without room looks again at waiting Sandboxes; default 10s
	SpecRetry      time.Duration // a missing image or Secret is looked for again; default 30s
	StopGrace      time.Duration // grace of containers stopped when their topology ends; default 2s
	DockerTimeout  time.Duration // bound on each Docker call; default 1m
	MinBackoff     time.Duration // first retry after an error; default DefaultMinBackoff
	MaxBackoff     time.Duration // retries after errors back off up to this; default DefaultMaxBackoff
	Workers        int           // Sandboxes converged at once; default 4

	// MaxExecOutputBytes is the node-wide ceiling of an Execution's maxOutputBytes, per stream; default
	// (and most) 262144.
	MaxExecOutputBytes int

	// CheckpointDir keeps the node's Checkpoint archives, in <CheckpointDir>/<Node>; "" turns Checkpoints
	// and restores off on this agent.
	CheckpointDir string
	// CheckpointStoreBytes is the most the node's archives, and captures under way, take on disk; a
	// Checkpoint that could pass it fails (StoreFull) instead. Default DefaultCheckpointStoreBytes; there is
	// no unlimited setting.
	CheckpointStoreBytes int64
	// CheckpointBytesPerNamespace caps the archives one namespace's Checkpoints hold in the node's store (each
	// archive once), with its captures under way; a capture that would pass it fails
	// (NamespaceCheckpointQuotaExceeded). 0, the default, sets no cap: the store's limit alone bounds them.
	CheckpointBytesPerNamespace int64
	// CheckpointRegistry is a repository of an OCI registry, host[:port]/path, that every archive captured
	// here is pushed to (by digest, tagged with its Checkpoint's UID) and that a restore pulls from when the
	// node's store lacks the archive, so that a Checkpoint restores on any node; "" keeps archives on their
	// node only. It needs CheckpointDir (the node's store holds captures and pulls under way).
	CheckpointRegistry string
	// CheckpointRegistrySecret names, namespace/name, the kubernetes.io/dockerconfigjson Secret with the
	// registry's credentials; "": anonymous.
	CheckpointRegistrySecret string
	// CheckpointRegistryPlainHTTP talks plain HTTP to the registry; allowed only to 127.0.0.0/8.
	CheckpointRegistryPlainHTTP bool
	CaptureTimeout              time.Duration // bound on copying one workspace out (the Sandbox is frozen meanwhile); default 5m
	ArchiveRecheck              time.Duration // how often a Ready Checkpoint's archive is looked for on disk; default 1m

	// TopologyPool is the IPv4 range from which the networks of Sandboxes with services get their /28
	// subnets; default DefaultTopologyPool. Agents sharing one Docker daemon are best given disjoint pools
	// (they find each other's subnets only when Docker refuses an overlap).
	TopologyPool string

	// EgressProxyPort is the port of the egress proxy the agent serves on the gateway of each Isolated bridge
	// (docs/egress.md); 0 serves none, and Isolated Sandboxes then reach nothing outside.
	EgressProxyPort int
	// EgressPermit are address ranges the proxy may connect to although they are private, loopback,
	// link-local or the host's own (an internal package mirror); Dockside's topology pool stays refused.
	EgressPermit []netip.Prefix
	// EgressIPv6 lets the proxy connect to public IPv6 addresses; without it IPv6 is refused but inside
	// EgressPermit (docs/egress.md).
	EgressIPv6 bool
	// EgressLimits bound what the Sandboxes of the node may hold open through the proxy (docs/egress.md,
	// "Limits and timeouts"); zero fields take the proxy's defaults.
	EgressLimits EgressLimits
	// HostFirewall installs the nftables table that drops what Dockside's bridges send to the host, except the
	// egress proxy's port (docs/egress.md); without the privilege the agent warns and goes on.
	HostFirewall bool

	// Dataplane serves exec on Sandboxes through the API server (subresources.dockside.dev); its zero value
	// serves none.
	Dataplane DataplaneOptions
}

// ImageGCOptions set the node's image garbage collection. HighPercent 0 (or 100) turns it off.
type ImageGCOptions struct {
	HighPercent int           // collect when the file system is fuller than this...
	LowPercent  int           // ...down to this
	MinAge      time.Duration // never an image used, or first seen, less long ago
	Filesystem  string        // a path on the file system of Docker's data root, as the agent sees it
	Period      time.Duration // default imagegc.DefaultPeriod
}

// dnsSubdomain is the rule for node names (as spec.nodeName's validation has it).
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// LeaseName is the name of the Lease an agent holds for node.
func LeaseName(node string) string { return nodelifecycle.LeaseName(node) }

func (o *Options) defaults() error {
	if !dnsSubdomain.MatchString(o.Node) || len(o.Node) > 238 {
		return fmt.Errorf("node name %q must be a DNS subdomain (lowercase letters, digits, '-' and '.') of at most 238 characters", o.Node)
	}
	if o.Driver == nil {
		return fmt.Errorf("a Docker driver is required")
	}
	if o.Capacity < 0 {
		return fmt.Errorf("capacity must be at least 1, not %d", o.Capacity)
	}
	setDefault(&o.Capacity, DefaultCapacity)
	if o.AllocatableMemory < 0 {
		return fmt.Errorf("the allocatable memory must be a positive number of bytes, not %d", o.AllocatableMemory)
	}
	if err := o.checkProcessRoom(); err != nil {
		return err
	}
	setDefault(&o.Workers, 4)
	setDefault(&o.HolderImage, DefaultHolderImage)
	setDefault(&o.GVisorRuntimeName, runtimes.DefaultGVisorName)
	setDefault(&o.LeaseNamespace, DefaultLeaseNamespace)
	setDefault(&o.NodeLostAfter, DefaultNodeLostAfter)
	if lease := leaseDuration(*o); o.LeaderElection && o.NodeLostAfter <= lease {
		return fmt.Errorf("--node-lost-after (%s) must be longer than the Lease's duration (%s): a node whose agent renews in time is never lost", o.NodeLostAfter, lease)
	}
	if o.APIQPS < 0 || o.APIBurst < 0 {
		return fmt.Errorf("the API server's request limits must be positive, not %g per second with bursts of %d", o.APIQPS, o.APIBurst)
	}
	setDefault(&o.APIQPS, DefaultAPIQPS)
	setDefault(&o.APIBurst, DefaultAPIBurst)
	setDefault(&o.MetricsBindAddress, "0")
	setDefault(&o.HealthProbeBindAddress, "0")
	if err := checkMetricsServing(o); err != nil {
		return err
	}
	setDefault(&o.SweepPeriod, time.Minute)
	setDefault(&o.BindRetry, 10*time.Second)
	setDefault(&o.RuntimesPeriod, time.Minute)
	setDefault(&o.SpecRetry, 30*time.Second)
	setDefault(&o.StopGrace, 2*time.Second)
	setDefault(&o.DockerTimeout, time.Minute)
	if o.MinBackoff < 0 || o.MaxBackoff < 0 {
		return fmt.Errorf("retry backoffs must be positive, not %s and %s", o.MinBackoff, o.MaxBackoff)
	}
	setDefault(&o.MinBackoff, DefaultMinBackoff)
	setDefault(&o.MaxBackoff, DefaultMaxBackoff)
	if o.MaxBackoff < o.MinBackoff {
		return fmt.Errorf("the longest retry backoff (%s) must be at least the first (%s)", o.MaxBackoff, o.MinBackoff)
	}
	if o.MaxExecOutputBytes <= 0 || o.MaxExecOutputBytes > dsv1alpha1.MaxExecutionOutputBytes {
		o.MaxExecOutputBytes = dsv1alpha1.MaxExecutionOutputBytes
	}
	if o.MaxImageBytes < 0 {
		return fmt.Errorf("the most bytes one image may take must be positive, or 0 for no cap, not %d", o.MaxImageBytes)
	}
	if gc := o.ImageGC; gc.HighPercent != 0 && (gc.LowPercent <= 0 || gc.LowPercent >= gc.HighPercent || gc.HighPercent > 100 || gc.MinAge < 0 || gc.Filesystem == "") {
		return fmt.Errorf("image garbage collection needs 0 < low threshold (%d%%) < high threshold (%d%%) <= 100, a minimum age of 0 or more (%s) and a file system path (%q)",
			gc.LowPercent, gc.HighPercent, gc.MinAge, gc.Filesystem)
	}
	setDefault(&o.ImageGC.Period, imagegc.DefaultPeriod)
	if o.CheckpointStoreBytes < 0 {
		return fmt.Errorf("the checkpoint store's limit must be a positive number of bytes, not %d", o.CheckpointStoreBytes)
	}
	setDefault(&o.CheckpointStoreBytes, DefaultCheckpointStoreBytes)
	if o.CheckpointBytesPerNamespace < 0 {
		return fmt.Errorf("the checkpoint bytes per namespace must be a positive number of bytes, or 0 for no cap, not %d", o.CheckpointBytesPerNamespace)
	}
	if o.CheckpointRegistry != "" && o.CheckpointDir == "" {
		return fmt.Errorf("a checkpoint registry needs a checkpoint folder: archives are captured and pulled through the node's store")
	}
	setDefault(&o.CaptureTimeout, 5*time.Minute)
	setDefault(&o.ArchiveRecheck, time.Minute)
	setDefault(&o.TopologyPool, DefaultTopologyPool)
	setDefault(&o.Dataplane.ServerName, DefaultDataplaneServerName)
	if o.EgressProxyPort < 0 || o.EgressProxyPort > 65535 {
		return fmt.Errorf("the egress proxy port must be between 1 and 65535, or 0 for none, not %d", o.EgressProxyPort)
	}
	if l := o.EgressLimits; l.MaxConns < 0 || l.MaxConnsPerSandbox < 0 || l.IdleTimeout < 0 || l.MaxDuration < 0 {
		return fmt.Errorf("the egress proxy's limits and timeouts must not be negative (0 takes the default): %+v", l)
	}
	if o.HostFirewall && o.EgressProxyPort == 0 {
		return fmt.Errorf("the host firewall lets Dockside's bridges reach the egress proxy's port only: give the proxy a port, or turn the firewall off")
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// New builds the agent's manager; Start it with the same ctx, one that ends on SIGTERM: the agent's
// background work (image pulls, wakeups at startup deadlines) ends with it.
func New(ctx context.Context, cfg *rest.Config, opts Options) (manager.Manager, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := checkSeccomp(ctx, opts.Driver, opts.DockerTimeout, opts.AllowNoSeccomp, ctrl.LoggerFrom(ctx).WithName("agent")); err != nil {
		return nil, err
	}
	storage, err := nodeStorage(ctx, opts.Driver, opts.DockerTimeout, ctrl.LoggerFrom(ctx).WithName("agent"))
	if err != nil {
		return nil, err
	}
	if err := engineCheck(ctx, opts.Driver, opts.DockerTimeout, ctrl.LoggerFrom(ctx).WithName("agent")); err != nil {
		return nil, err
	}
	primaryInit, err := nodeInit(ctx, opts.Driver, opts.DockerTimeout, ctrl.LoggerFrom(ctx).WithName("agent"))
	if err != nil {
		return nil, err
	}
	startRuntimes, err := nodeRuntimes(ctx, opts.Driver, opts, ctrl.LoggerFrom(ctx).WithName("agent"))
	if err != nil {
		return nil, err
	}
	allocatable, err := allocatableMemory(ctx, opts.Driver, opts.DockerTimeout, opts.AllocatableMemory, ctrl.LoggerFrom(ctx).WithName("agent"))
	if err != nil {
		return nil, err
	}
	allocatableProcesses, perContainer, err := processRoom(ctx, opts.Driver, opts, ctrl.LoggerFrom(ctx).WithName("agent"))
	if err != nil {
		return nil, err
	}
	cfg = limited(cfg, opts)
	// How long the agent's API requests take, and wait for the token bucket before they go: what tells a
	// slow API server from the agent's own limit (docs/pools.md, "How fast").
	metrics.RegisterRESTClientMetrics(metrics.MetricRequestLatency, metrics.MetricRateLimiterLatency)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering the Kubernetes kinds: %w", err)
	}
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("registering Dockside's kinds: %w", err)
	}
	mopts := managerOptions(scheme, opts)
	if opts.LeaderElection {
		lock := nodelifecycle.Lock{Node: opts.Node, Namespace: opts.LeaseNamespace, HostLockDir: opts.CheckpointDir, RenewDeadline: opts.RenewDeadline}
		if mopts.LeaderElectionResourceLockInterface, err = nodelifecycle.NewLock(cfg, lock, ctrl.LoggerFrom(ctx).WithName("agent")); err != nil {
			return nil, fmt.Errorf("making the node's Lease lock: %w", err)
		}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("making the manager: %w", err)
	}
	unbound, err := cache.New(cfg, cache.Options{
		Scheme: scheme, Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		ByObject: map[client.Object]cache.ByObject{&dsv1alpha1.Sandbox{}: {
			Field: fields.OneTermEqualSelector(dsv1alpha1.FieldSandboxNodeName, ""),
			// Every agent holds every unbound Sandbox: only what binding reads (docs/security.md, "What bounds
			// the agent's memory").
			Transform: sandbox.UnboundCacheTransform,
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("making the cache of unbound Sandboxes: %w", err)
	}
	if err := mgr.Add(unbound); err != nil {
		return nil, fmt.Errorf("adding the cache of unbound Sandboxes: %w", err)
	}

	topologySubnets, err := sandbox.NewTopologySubnets(opts.TopologyPool)
	if err != nil {
		return nil, fmt.Errorf("topology pool: %w", err)
	}
	var store *archive.Store
	if opts.CheckpointDir != "" {
		if store, err = archive.Open(filepath.Join(opts.CheckpointDir, opts.Node),
			archive.Limits{Store: opts.CheckpointStoreBytes, Namespace: opts.CheckpointBytesPerNamespace}); err != nil {
			return nil, fmt.Errorf("opening the checkpoint store: %w", err)
		}
	}
	registry, err := checkpointRegistry(ctx, mgr.GetAPIReader(), opts)
	if err != nil {
		return nil, err
	}

	driver := metered.Wrap(opts.Driver, opts.DockerTimeout)
	log := ctrl.LoggerFrom(ctx).WithName("agent")
	if opts.HostFirewall {
		if err := mgr.Add(&hostfirewall.Guard{Port: uint16(opts.EgressProxyPort), Log: log}); err != nil {
			return nil, fmt.Errorf("adding the host firewall guard: %w", err)
		}
	}
	var proxy *egress.Proxy
	if opts.EgressProxyPort != 0 {
		if proxy, err = newEgressProxy(opts, driver, mgr.GetClient(), mgr.GetEventRecorder("dockside-agent"), log); err != nil {
			return nil, err
		}
		if err := mgr.Add(serveEgress(proxy)); err != nil {
			return nil, fmt.Errorf("adding the egress proxy: %w", err)
		}
	}
	pulls, err := imagepuller.OpenRecords(pullRecordsPath(opts))
	if err != nil {
		return nil, fmt.Errorf("opening the image pull records: %w", err)
	}
	requeues := make(chan event.TypedGenericEvent[*dsv1alpha1.Sandbox], 1024)
	nodeRuntimes := runtimes.NewLive(startRuntimes)
	watchRuntimes := newRuntimesWatch(runtimesWatch{
		driver: driver, live: nodeRuntimes, opts: opts, unbound: unbound, requeues: requeues, log: log,
	})
	if err := mgr.Add(watchRuntimes); err != nil {
		return nil, fmt.Errorf("adding the reader of the node's runtimes: %w", err)
	}
	freezes := &handoff.Freezes{}
	runs := execution.NewRuns()
	wake := handoff.NewWakeups(ctx, requeues)
	verdicts := handoff.NewVerdicts(wake.Now)
	// A thaw on a call brings a pass that reports the Sandbox Running again; off the caller's path.
	idle := &handoff.Idle{Thaw: driver, Wake: func(key types.NamespacedName) { go wake.Now(key) }}
	recorder := mgr.GetEventRecorder("dockside-agent")
	r := &sandbox.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Unbound: unbound, Requeues: requeues, Driver: driver,
		Recorder: recorder,
		Options: sandbox.Options{
			Node: opts.Node, Capacity: opts.Capacity, PerContainer: perContainer,
			Allocatable: sandbox.Holding{Memory: allocatable, Pids: allocatableProcesses.Pids, MilliCPU: allocatableProcesses.MilliCPU}, RequireDigest: opts.RequireDigest, MaxImageBytes: opts.MaxImageBytes, HolderImage: opts.HolderImage,
			AllowRoot: opts.AllowRoot, RefuseUnrestricted: opts.RefuseUnrestricted, Runtimes: nodeRuntimes, Storage: storage, Init: primaryInit, EgressProxyPort: opts.EgressProxyPort,
			BindRetry: opts.BindRetry, SpecRetry: opts.SpecRetry, StopGrace: opts.StopGrace, ProbeLimit: 1024,
			ProbeConcurrency: 2 * opts.Workers, // readiness checks run off the workers; a worker's share of them at once
		},
		Subnets: topologySubnets, Egress: egressGateways(proxy),
		Archives: store, Registry: registry, Freezes: freezes, Commands: runs, Verdicts: verdicts, Idle: idle,
		Images: pullerOf(ctx, driver, pulls, opts, wake), Wake: wake,
	}
	if opts.LeaderElection {
		r.OfferedElsewhere = offeredElsewhere(mgr.GetClient(), opts.LeaseNamespace, opts.Node, opts.NodeLostAfter)
		advert := &runtimesAdvert{client: mgr.GetClient(), namespace: opts.LeaseNamespace, lease: LeaseName(opts.Node), live: nodeRuntimes, log: log}
		if err := mgr.Add(advert); err != nil {
			return nil, fmt.Errorf("adding the publisher of the node's runtimes: %w", err)
		}
	}
	executions := &execution.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Driver: driver, Runs: runs, Verdicts: verdicts,
		Freezes: freezes, Idle: idle, Recorder: recorder,
		Options: execution.Options{Node: opts.Node, MaxOutputBytes: opts.MaxExecOutputBytes, SupervisorImage: opts.HolderImage},
	}
	reconcilers := []reconciler{
		{r, queued(opts)},
		{executions, queued(opts)},
		// What it does for Executions no agent took is a courtesy: one worker, in a queue of its own.
		{untaken{executions}, controller.Options{MaxConcurrentReconciles: 1, RateLimiter: backoff(opts)}},
		{&sandboxservice.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Unbound: unbound,
			Options: sandboxservice.Options{SpecRetry: opts.SpecRetry},
		}, controller.Options{}},
		{&warmpool.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Unbound: unbound,
			Options: warmpool.Options{Node: opts.Node, SpecRetry: opts.SpecRetry},
		}, controller.Options{}},
		// Claims are the fast path (docs/design/pools.md): a pass is two API writes and no Docker call, so
		// workers enough that 20 claims made at once do not queue (docs/pools.md, "How fast").
		{&sandboxclaim.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Unbound: unbound,
			Options: sandboxclaim.Options{Node: opts.Node, SpecRetry: opts.SpecRetry},
		}, controller.Options{MaxConcurrentReconciles: 8 * opts.Workers}},
	}
	if store != nil {
		reconcilers = append(reconcilers, reconciler{&checkpoint.Reconciler{
			Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Driver: driver, Store: store, Registry: registry,
			Freezes: freezes, Wake: wake.Now, Recorder: recorder,
			Options: checkpoint.Options{Node: opts.Node, CaptureTimeout: opts.CaptureTimeout, RecheckPeriod: opts.ArchiveRecheck},
		}, controller.Options{MaxConcurrentReconciles: opts.Workers}})
	}
	if opts.LeaderElection {
		// Runs only while this agent holds its own Lease: only a live agent judges others.
		reconcilers = append(reconcilers, reconciler{&nodelifecycle.Reconciler{
			Client: mgr.GetClient(), Leases: mgr.GetCache(), APIReader: mgr.GetAPIReader(),
			Options: nodelifecycle.Options{Node: opts.Node, Namespace: opts.LeaseNamespace, LostAfter: opts.NodeLostAfter},
		}, controller.Options{}})
	}
	for _, rc := range reconcilers {
		if err := rc.SetupWithManager(ctx, mgr, rc.opts); err != nil {
			return nil, err
		}
	}
	if gc := opts.ImageGC; gc.HighPercent > 0 && gc.HighPercent < 100 {
		if err := mgr.Add(&imagegc.Collector{
			Driver: driver, Disk: imagegc.Statfs(gc.Filesystem), Log: log.WithName("imagegc"),
			Options: imagegc.Options{HighPercent: gc.HighPercent, LowPercent: gc.LowPercent, MinAge: gc.MinAge, Period: gc.Period, Keep: []string{opts.HolderImage}},
		}); err != nil {
			return nil, fmt.Errorf("adding the image garbage collector: %w", err)
		}
	}
	if err := addDataplane(mgr, opts, driver, freezes, idle, log); err != nil {
		return nil, err
	}
	sweeper := nodewatch.NewSweeper(nodewatch.Sweeper{
		Cleaner: r, Driver: driver, Sandboxes: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Node: opts.Node,
		Period: opts.SweepPeriod, Out: requeues,
	})
	if err := mgr.Add(sweeper); err != nil {
		return nil, fmt.Errorf("adding the sweeper: %w", err)
	}
	if err := mgr.Add(&nodewatch.DockerEvents{Driver: driver, Out: requeues, Resync: func() {
		// The daemon may have come back with other runtimes (daemon.json changed and Docker restarted).
		sweeper.Kick()
		watchRuntimes.Kick()
	}}); err != nil {
		return nil, fmt.Errorf("adding the Docker event pump: %w", err)
	}
	if err := mgr.Add(registered(nodewatch.NewPhaseCollector(opts.Node, mgr.GetCache()))); err != nil {
		return nil, fmt.Errorf("adding the phase collector: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("docker", func(req *http.Request) error {
		if _, err := driver.Ping(req.Context()); err != nil {
			return fmt.Errorf("pinging Docker: %w", err)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("adding the readiness check: %w", err)
	}
	return mgr, nil
}

// reconciler is one reconciler of the agent with the options of its controller.
type reconciler struct {
	setup
	opts controller.Options
}

// setup is the one shape of every reconciler (docs/design/layout.md).
type setup interface {
	SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error
}

// untaken wires the Execution reconciler's courtesy controller (SetupUntakenWithManager) in the same shape.
type untaken struct{ *execution.Reconciler }

func (u untaken) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	return u.SetupUntakenWithManager(ctx, mgr, opts) //nolint:wrapcheck // an adapter: the method it calls wraps
}

// queued are the controller options of the node's own work: opts.Workers passes at once, each retried after
// an error with a backoff of its own.
func queued(opts Options) controller.Options {
	return controller.Options{MaxConcurrentReconciles: opts.Workers, RateLimiter: backoff(opts)}
}

// backoff is a fresh rate limiter for one controller's queue: failures are counted per queue. It has no
// queue-wide bucket (controller-runtime's default adds one of 10 per second): the one token bucket of the
// agent's clients (limited) already bounds what passes ask of the API server, and a bucket here would delay
// passes that ask it nothing, such as a deadline enforced during an outage (docs/agent.md).
func backoff(opts Options) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](opts.MinBackoff, opts.MaxBackoff)
}

// registered keeps a collector registered while the agent holds its node's Lease, so that the node's
// gauges come from the one agent acting for it.
func registered(c prometheus.Collector) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		if err := metrics.Registry.Register(c); err != nil {
			return fmt.Errorf("registering the phase collector's metrics: %w", err)
		}
		<-ctx.Done()
		metrics.Registry.Unregister(c)
		return nil
	})
}

func managerOptions(scheme *runtime.Scheme, opts Options) ctrl.Options {
	return ctrl.Options{
		Scheme: scheme,
		// Only this node's Sandboxes are cached and watched (spec.nodeName is a CRD selectable field, so the
		// API server filters); unbound ones come through a second cache (see New).
		Cache: cache.Options{
			// Every object, the node's own Sandboxes included, without the labels, annotations, managed fields
			// and ownerReferences no reconciler reads, which only the object's size bounds (docs/security.md,
			// "What bounds the agent's memory").
			DefaultTransform: cachetrim.Transform,
			ByObject: map[client.Object]cache.ByObject{
				&dsv1alpha1.Sandbox{}: {Field: fields.OneTermEqualSelector(dsv1alpha1.FieldSandboxNodeName, opts.Node)},
				// Executions carry no node: each agent sees them all, so it keeps only their bounded fields,
				// without command, stdin, env or output (the reconciler reads those from the API server).
				&dsv1alpha1.Execution{}: {Transform: execution.CacheTransform},
				// The agents' Leases, which the node lifecycle controller watches (only with leader election).
				// Their annotations hold the agents' data plane addresses (internal/dataplane); only operators write
				// in that namespace.
				&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{opts.LeaseNamespace: {}}, Transform: cache.TransformStripManagedFields()},
			},
		},
		Metrics:                       metricsServing(opts),
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              LeaseName(opts.Node),
		LeaderElectionNamespace:       opts.LeaseNamespace,
		LeaderElectionReleaseOnCancel: true, // a clean stop hands the node over at once
		LeaseDuration:                 durationOrNil(opts.LeaseDuration),
		RenewDeadline:                 durationOrNil(opts.RenewDeadline),
		RetryPeriod:                   durationOrNil(opts.RetryPeriod),
		Controller: config.Controller{
			// One agent per process in production; tests run several, each with its own "sandbox" controller.
			SkipNameValidation: ptr.To(true),
			// First in, first out. controller-runtime's priority queue puts what a (re)started agent finds in its
			// first list below every later event, so on a busy node those Sandboxes (unbound ones above all, which
			// get no later event) waited for minutes, across restarts (make bench's soak found 30 of 1,000).
			UsePriorityQueue: ptr.To(false),
		},
	}
}

// limited is cfg with one token bucket for every client made from it, so that the agent's requests add up to
// at most opts.APIQPS (a bucket per client would multiply the limit by the number of kinds).
func limited(cfg *rest.Config, opts Options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(opts.APIQPS), opts.APIBurst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	return cfg
}

func leaseDuration(opts Options) time.Duration {
	if opts.LeaseDuration > 0 {
		return opts.LeaseDuration
	}
	return 15 * time.Second // controller-runtime's default
}

func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}
