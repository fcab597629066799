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

		{execution, sandbox, false},
		{checkpoint, sandbox, false},
		{execution, checkpoint, true},
		{checkpoint, execution, true},
		{sandbox, execution, true},
		{sandbox, checkpoint, true},
		{sandbox, sandboxservice, true},
		{sandboxservice, sandbox, true},
		{sandboxservice, execution, true},
		{sandboxservice, checkpoint, true},
		{execution, sandboxservice, true},
		{sandbox + "/admission", sandbox, false},
		{module + "/internal/status", sandbox, true},
		{module + "/internal/imagepuller", execution, true},
		{dockerdriver + "/metered", sandboxservice, true},

		{agent, sandbox, false},
		{agent, execution, false},
		{agent, checkpoint, false},
		{agent, sandboxservice, false},
		{tests + "/dockercli", sandbox, false},

		{cmd + "/dockside-agent", agent, false},
		{cmd + "/dockside-agent", execution, true},
		{cmd + "/kubectl-dockside", sandbox, true},
		{cmd + "/dockside-agent", controllers, true},
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
