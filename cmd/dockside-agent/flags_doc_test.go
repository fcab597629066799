package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// agentDoc is the page that documents every flag of the binary.
var agentDoc = filepath.Join("..", "..", "docs", "agent.md")

// flagRow is a row of docs/agent.md's flag table: | `--name` | default | meaning |.
var flagRow = regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| ([^|]*) \\|")

// documentedFlags maps each flag of docs/agent.md's table to its Default cell.
func documentedFlags(t *testing.T) map[string]string {
	t.Helper()
	page, err := os.ReadFile(agentDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, m := range flagRow.FindAllStringSubmatch(string(page), -1) {
		if _, twice := rows[m[1]]; twice {
			t.Errorf("%s lists --%s twice", agentDoc, m[1])
		}
		rows[m[1]] = strings.TrimSpace(m[2])
	}
	return rows
}

// registeredFlags is the flag set the binary parses, built by the same function main uses.
func registeredFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("dockside-agent", flag.ContinueOnError)
	bindFlags(fs, &settings{})
	return fs
}

func TestAgentDocListsExactlyTheBinarysFlags(t *testing.T) {
	documented := documentedFlags(t)
	var registered []string
	registeredFlags().VisitAll(func(f *flag.Flag) { registered = append(registered, f.Name) })
	if len(registered) == 0 {
		t.Fatal("the agent registers no flags")
	}
	for _, name := range registered {
		if _, ok := documented[name]; !ok {
			t.Errorf("--%s is a flag of dockside-agent that %s does not list", name, agentDoc)
		}
	}
	for name := range documented {
		if !slices.Contains(registered, name) {
			t.Errorf("%s lists --%s, which dockside-agent does not have", agentDoc, name)
		}
	}
}

// TestAgentDocGivesTheBinarysDefaults compares each default that does not depend on the host with the Default
// cell's first word: on/off for booleans, equal durations, the value itself otherwise. Defaults the binary
// leaves empty are worked out at start (the host's memory) or mean none, which the cell says in words.
func TestAgentDocGivesTheBinarysDefaults(t *testing.T) {
	documented := documentedFlags(t)
	registeredFlags().VisitAll(func(f *flag.Flag) {
		cell, ok := documented[f.Name]
		if !ok || f.DefValue == "" || f.DefValue == strings.ToLower(hostname()) {
			return
		}
		first := strings.Trim(strings.Fields(cell + " ")[0], "`")
		want := f.DefValue
		var value any
		if getter, ok := f.Value.(flag.Getter); ok {
			value = getter.Get()
		}
		switch value := value.(type) {
		case bool:
			want = map[bool]string{true: "on", false: "off"}[value]
		case time.Duration:
			if d, err := time.ParseDuration(first); err == nil && d == value {
				return
			}
		}
		if first != want {
			t.Errorf("%s gives --%s the default %q; the binary's is %q", agentDoc, f.Name, cell, want)
		}
	})
}
