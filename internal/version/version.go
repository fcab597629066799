// Package version says which build of Dockside is running, for every binary to report: the agent's start-up
// log, the MCP server's implementation info and `kubectl dockside version`.
package version

import (
	"runtime/debug"
	"strings"
)

// String is the running binary's version: the module version when it was built from a tagged module, else
// the commit it was built from (vcs.revision, which go build records in a Git checkout), short, with
// "-dirty" when the tree had uncommitted changes; "devel" when the binary carries neither (go run, go test).
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return fromBuildInfo(info)
}

func fromBuildInfo(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		return "devel"
	}
	revision = revision[:min(12, len(revision))]
	if modified == "true" {
		revision += "-dirty"
	}
	return strings.TrimSpace(revision)
}
