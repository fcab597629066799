package architecture

import "testing"

// TestImportRulesDecide pins what the table allows and forbids on imports that do not exist (yet), so that
// a change to the table or to its matching shows up here rather than as a rule that silently stopped
// applying.
func TestImportRulesDecide(t *testing.T) {
	cases := []struct {
		importer, imp string
		broken        bool
	}{
		{module + "/internal/imagepuller", "github.com/docker/docker/client", true},
		{sandbox, "github.com/moby/spdystream", true},
		{module + "/pkg/execution", "github.com/docker/go-connections/nat", true},
		{module + "/dockerdriver/metered", "github.com/docker/docker/client", false},
		{dockerdriver, "github.com/docker/docker/api/types/container", false},

		// No reconciler imports another, whichever it is, but may have subpackages of its own.
		{execution, sandbox, true},
		{checkpoint, sandbox, true},
		{execution, checkpoint, true},
		{sandbox, execution, true},
		{sandbox, sandboxservice, true},
		{sandboxservice, sandbox, true},
		{nodelifecycle, sandbox, true},
		{sandbox + "/steps", execution, true},
		{controllers + "/newkind", sandbox, true},
		{sandbox + "/admission", sandbox, false},
		{sandbox, sandbox + "/admission", false},
		{execution, module + "/internal/handoff", false},
		{checkpoint, module + "/internal/topology", false},
		{sandbox, module + "/internal/status", false},

		// Shared contracts and machinery never import a reconciler.
		{module + "/internal/status", sandbox, true},
		{module + "/internal/topology", sandbox, true},
		{module + "/internal/handoff", execution, true},
		{module + "/internal/nodewatch", sandbox, true},
		{module + "/internal/prober", sandbox, true},
		{module + "/internal/imagepuller", execution, true},
		{dockerdriver + "/metered", sandboxservice, true},
		{module + "/api/v1alpha1", controllers, true},

		// Only the agent wires them up; tests may import what they exercise.
		{agent, sandbox, false},
		{module + "/internal/dataplane", sandbox, true},
		{module + "/internal/dataplane", module + "/internal/topology", false},
		{module + "/internal/dataplane", "github.com/docker/docker/client", true},
		{agent, execution, false},
		{agent, checkpoint, false},
		{agent, sandboxservice, false},
		{agent, nodelifecycle, false},
		{agent, module + "/internal/nodewatch", false},
		{tests + "/integration/controllers", sandbox, false},
		{tests + "/internal/agentproc", testutil + "/tarball", false},
		{dockerdriver + "/fake", testutil + "/tarball", true},
		{agent, testutil + "/nftrules", true},

		// Binaries reach reconcilers through the agent, and only binaries and tests import the agent.
		{cmd + "/dockside-agent", agent, false},
		{cmd + "/dockside-agent", execution, true},
		{cmd + "/kubectl-dockside", sandbox, true},
		{cmd + "/dockside-agent", controllers, true},
		{tests + "/e2e", agent, false},
		{module + "/internal/egress", agent, true},
		{sandbox, agent, true},
		{module + "/internal/hostfirewall", agent, true},

		// The local cluster serves make run and the tests only.
		{docksideDev, localcluster, false},
		{tests + "/internal/envtestenv", localcluster, false},
		{localcluster, localcluster + "/pki", false},
		{agent, localcluster, true},
		{cmd + "/kubectl-dockside", localcluster + "/pki", true},
		{module + "/internal/dataplane", localcluster, true},

		// The benches' report format serves the benches and hack/perfdoc, never the product.
		{tests + "/bench", tests + "/bench/report", false},
		{hack + "/perfdoc", tests + "/bench/report", false},
		{agent, tests + "/bench/report", true},
		{cmd + "/dockside-dev", tests + "/internal/envtestenv", true},

		// The files client and the files server meet only in fileswire.
		{filesClient, filesServer, true},
		{filesClient, filesWire, false},
		{filesServer, filesWire, false},
		{filesWire, filesServer, true},
		{filesWire, filesClient, true},
		{cmd + "/kubectl-dockside", filesClient, false},
	}
	for _, c := range cases {
		var broken []string
		for _, rule := range importRules {
			if rule.breaks(c.importer, c.imp) {
				broken = append(broken, rule.why)
			}
		}
		if (len(broken) > 0) != c.broken {
			t.Errorf("%s importing %s: want broken=%v, rules broken: %q", short(c.importer), short(c.imp), c.broken, broken)
		}
	}
}
