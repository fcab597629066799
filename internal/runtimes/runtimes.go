// Package runtimes is what a node offers of the OCI runtimes a Sandbox may name (spec.runtime), how an agent
// publishes it on its Lease, and how other agents read it there (docs/design/scheduling.md, "Runtimes").
package runtimes

import (
	"fmt"
	"slices"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Annotation on an agent's node Lease lists the runtimes its Docker offers, comma-separated in the API's
// spelling (gVisor,runc), for the agents that look for a node able to run a Sandbox.
const Annotation = "dockside.dev/runtimes"

// DefaultGVisorName is the name under which Docker's daemon.json registers gVisor's runsc by convention.
const DefaultGVisorName = "runsc"

// Node is what one node's Docker offers: each runtime a container may ask for, by the name Docker knows it
// by, and the one a Sandbox or SandboxService that names none runs under.
type Node struct {
	Default    dsv1alpha1.Runtime
	docker     map[dsv1alpha1.Runtime]string // runtime -> Docker's name for it; runc's is "" (the daemon's default)
	gvisorName string                        // Docker's name for gVisor, offered or not
}

// Discover works out a node's runtimes from the names docker info lists at the agent's start: runc is always
// there (Docker runs a container under its default runtime, runc, when none is named), gVisor where gvisorName
// is listed. The default must be one the node offers: an agent whose --default-runtime its Docker cannot run
// refuses to start rather than fail every Sandbox.
func Discover(listed []string, gvisorName string, def dsv1alpha1.Runtime) (Node, error) {
	if def != "" && !slices.Contains(dsv1alpha1.Runtimes, def) {
		return Node{}, fmt.Errorf("the default runtime must be runc or gVisor, not %q", def)
	}
	n := Reread(listed, gvisorName, def)
	if !n.Offers(n.Default) {
		return Node{}, fmt.Errorf("the default runtime is gVisor, but the Docker daemon offers no runtime %q "+
			"(docker info lists %s): register runsc in daemon.json's runtimes, or name it with --gvisor-runtime-name",
			gvisorName, strings.Join(listed, ", "))
	}
	return n, nil
}

// Reread is Discover for a running agent that reads its daemon again: it never refuses. A default the daemon
// no longer offers stays the default, and Sandboxes that name no runtime wait for it (Offers is false).
func Reread(listed []string, gvisorName string, def dsv1alpha1.Runtime) Node {
	n := Node{Default: def, docker: map[dsv1alpha1.Runtime]string{dsv1alpha1.RuntimeRunc: ""}, gvisorName: gvisorName}
	if n.Default == "" {
		n.Default = dsv1alpha1.RuntimeRunc
	}
	if gvisorName != "" && slices.Contains(listed, gvisorName) {
		n.docker[dsv1alpha1.RuntimeGVisor] = gvisorName
	}
	return n
}

// Offers tells whether the node's Docker can run a container under rt.
func (n Node) Offers(rt dsv1alpha1.Runtime) bool {
	_, ok := n.docker[rt]
	return ok || rt == dsv1alpha1.RuntimeRunc && n.docker == nil
}

// Of is the runtime a container asking for asked runs under on this node: asked, or the node's default.
func (n Node) Of(asked dsv1alpha1.Runtime) dsv1alpha1.Runtime {
	switch {
	case asked != "":
		return asked
	case n.Default != "":
		return n.Default
	}
	return dsv1alpha1.RuntimeRunc
}

// DockerName is the Docker runtime a container asking for asked is created with (ContainerSpec.Runtime):
// "" for runc, the daemon's default. gVisor keeps its name after the daemon dropped it, so that a container
// of a started Sandbox made again then is refused by Docker rather than run under runc.
func (n Node) DockerName(asked dsv1alpha1.Runtime) string {
	if n.Of(asked) != dsv1alpha1.RuntimeGVisor {
		return ""
	}
	if n.gvisorName == "" {
		return DefaultGVisorName
	}
	return n.gvisorName
}

// Offered lists the runtimes the node offers, sorted, in the API's spelling.
func (n Node) Offered() []dsv1alpha1.Runtime {
	out := make([]dsv1alpha1.Runtime, 0, len(dsv1alpha1.Runtimes))
	for _, rt := range dsv1alpha1.Runtimes {
		if n.Offers(rt) {
			out = append(out, rt)
		}
	}
	slices.Sort(out)
	return out
}

// AnnotationValue is the node's Annotation: the runtimes it offers, comma-separated.
func (n Node) AnnotationValue() string {
	names := make([]string, 0, len(dsv1alpha1.Runtimes))
	for _, rt := range n.Offered() {
		names = append(names, string(rt))
	}
	return strings.Join(names, ",")
}

// Listed tells whether an Annotation's value lists rt.
func Listed(value string, rt dsv1alpha1.Runtime) bool {
	return slices.Contains(strings.Split(value, ","), string(rt))
}
