// Package dockercli is the Docker command line as the end-to-end tests and the benchmarks use it: they check
// what Docker itself recorded, not what the agent believes, and find what a run left behind by label.
package dockercli

import (
	"fmt"
	"os/exec"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Run runs `docker args...` and returns its trimmed output; a failure carries what Docker said.
func Run(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// Leftovers lists every container, network and volume that carries the node's label, as "kind id".
func Leftovers(node string) ([]string, error) {
	filter := "label=" + dsv1alpha1.LabelNode + "=" + node
	var found []string
	for _, kind := range []string{"container", "network", "volume"} {
		args := []string{kind, "ls", "-q", "--filter", filter}
		if kind == "container" {
			args = []string{"container", "ls", "-aq", "--filter", filter}
		}
		out, err := Run(args...)
		if err != nil {
			return nil, err
		}
		for _, id := range strings.Fields(out) {
			found = append(found, kind+" "+id)
		}
	}
	return found, nil
}
