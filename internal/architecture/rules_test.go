package architecture

// module is Dockside's module path; every rule below names packages by import path prefix, where a prefix
// covers the package itself and everything under it (internal/controller/sandbox does not cover
// internal/controller/sandboxservice).
const module = "github.com/dockside-dev/dockside"

// The packages the rules are about.
const (
	dockerdriver   = module + "/dockerdriver"
	agent          = module + "/internal/agent"
	cmd            = module + "/cmd"
	tests          = module + "/test"
	controllers    = module + "/internal/controller"
	sandbox        = controllers + "/sandbox"
	execution      = controllers + "/execution"
	checkpoint     = controllers + "/checkpoint"
	sandboxservice = controllers + "/sandboxservice"
	dataplane      = module + "/internal/dataplane"
)

// dockerSDK is the Docker client and everything it drags in: only dockerdriver may import it, so that the
// rest of the agent sees Docker only through the driver's interface (and its fake).
var dockerSDK = []string{"github.com/docker/docker", "github.com/docker/go-connections", "github.com/moby"}

// importRule forbids the non-test packages under importers to import anything under forbidden, except the
// packages under allowed. A package may always import packages under its own forbidden prefix (its own
// subpackages), and test files are not checked: tests may import whatever they exercise.
type importRule struct {
	why       string
	importers string
	forbidden []string
	allowed   []string
}

// importRules is the table: adjust it here when the layout changes.
var importRules = []importRule{
	{
		why:       "only dockerdriver talks to Docker",
		importers: module,
		forbidden: dockerSDK,
		allowed:   []string{dockerdriver},
	},
	{
		why:       "no reconciler builds on execution, checkpoint or sandboxservice; only the manager wires them up",
		importers: module,
		forbidden: []string{execution, checkpoint, sandboxservice},
		allowed:   []string{agent, tests},
	},
	{
		why:       "execution, checkpoint and the data plane (which names the primary and its mounts) build on the sandbox reconciler; otherwise only the manager wires it up",
		importers: module,
		forbidden: []string{sandbox},
		allowed:   []string{agent, tests, execution, checkpoint, dataplane},
	},
	{
		why:       "binaries reach the reconcilers only through internal/agent",
		importers: cmd,
		forbidden: []string{controllers},
	},
}
