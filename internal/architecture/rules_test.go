package architecture

// module is Dockside's module path; every rule below names packages by import path prefix, where a prefix
// covers the package itself and everything under it (internal/controller/sandbox does not cover
// internal/controller/sandboxservice).
const module = "github.com/dockside-dev/dockside"

// The packages the rules are about.
const (
	dockerdriver = module + "/dockerdriver"
	agent        = module + "/internal/agent"
	cmd          = module + "/cmd"
	tests        = module + "/test"
	hack         = module + "/hack"
	// testutil holds test helpers that unit tests outside test/ share with the suites.
	testutil = module + "/internal/testutil"
	// controllers holds one package per reconciler, which only internal/agent wires up.
	controllers    = module + "/internal/controller"
	sandbox        = controllers + "/sandbox"
	execution      = controllers + "/execution"
	checkpoint     = controllers + "/checkpoint"
	sandboxservice = controllers + "/sandboxservice"
	nodelifecycle  = controllers + "/nodelifecycle"
	// localcluster is the etcd and kube-apiserver that `make run` (cmd/dockside-dev) and the suites start.
	localcluster = module + "/internal/localcluster"
	docksideDev  = cmd + "/dockside-dev"
	// The files subresource: its server, its client, and the words both speak.
	filesServer = module + "/internal/dataplane/files"
	filesClient = module + "/internal/dataplane/filesclient"
	filesWire   = module + "/internal/dataplane/fileswire"
)

// dockerSDK is the Docker client and everything it drags in: only dockerdriver may import it, so that the
// rest of the agent sees Docker only through the driver's interface (and its fake).
var dockerSDK = []string{"github.com/docker/docker", "github.com/docker/go-connections", "github.com/moby"}

// importRule forbids the non-test packages under importers to import anything under forbidden, except the
// packages under allowed. A package may always import packages under its own forbidden prefix (its own
// subpackages), and test files are not checked: tests may import whatever they exercise. With apart, the
// packages right under importers (and theirs) may not import one another either.
type importRule struct {
	why       string
	importers string
	forbidden []string
	allowed   []string
	apart     bool
}

// importRules is the table: adjust it here when the layout changes. Go's own rule on internal/ carries the
// rest: nothing outside the module imports a reconciler, a shared contract or the agent.
var importRules = []importRule{
	{
		why:       "only dockerdriver talks to Docker",
		importers: module,
		forbidden: dockerSDK,
		allowed:   []string{dockerdriver},
	},
	{
		why:       "no reconciler imports another: what they share lives in packages of its own (internal/topology, internal/handoff, internal/status)",
		importers: controllers,
		apart:     true,
	},
	{
		why:       "only internal/agent wires up reconcilers: shared contracts and machinery never import one",
		importers: module,
		forbidden: []string{controllers},
		allowed:   []string{agent, tests, controllers, cmd},
	},
	{
		// Unit tests outside test/ share these helpers with the suites, so Go's internal rule cannot keep them
		// out of the product; this rule does.
		why:       "internal/testutil serves tests only",
		importers: module,
		forbidden: []string{testutil},
		allowed:   []string{tests},
	},
	{
		why:       "binaries reach the reconcilers only through internal/agent",
		importers: cmd,
		forbidden: []string{controllers},
	},
	{
		why:       "internal/agent is the wiring: only the binaries and tests import it",
		importers: module,
		forbidden: []string{agent},
		allowed:   []string{cmd, tests},
	},
	{
		why:       "internal/localcluster is make run's and the tests' local cluster, no part of the product",
		importers: module,
		forbidden: []string{localcluster},
		allowed:   []string{docksideDev, tests},
	},
	{
		why:       "test/ holds the suites, the benches and their helpers: only tests and hack/ tools import it",
		importers: module,
		forbidden: []string{tests},
		allowed:   []string{hack},
	},
	{
		why:       "the files client does not import the files server: what both need is internal/dataplane/fileswire",
		importers: filesClient,
		forbidden: []string{filesServer},
	},
	{
		why:       "internal/dataplane/fileswire is the files call's words only: it imports neither end",
		importers: filesWire,
		forbidden: []string{filesServer, filesClient},
	},
}
