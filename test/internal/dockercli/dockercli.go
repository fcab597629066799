// Package dockercli is the Docker command line as the tests and the benchmarks use it: they check what Docker
// itself recorded, not what the agent believes, and find what a run left behind by label.
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

// kinds are what Dockside makes in Docker, in the order they can be removed: containers before the networks
// and volumes they use.
var kinds = []string{"container", "network", "volume"}

// Leftovers lists every container, network and volume that carries the node's label, as "kind id".
func Leftovers(node string) ([]string, error) {
	var found []string
	for _, kind := range kinds {
		ids, err := labelled(kind, node)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			found = append(found, kind+" "+id)
		}
	}
	return found, nil
}

// RemoveLabelled force-removes every container, network and volume that carries the node's label.
func RemoveLabelled(node string) error {
	for _, kind := range kinds {
		ids, err := labelled(kind, node)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			continue
		}
		rm := []string{kind, "rm"}
		if kind == "container" {
			rm = append(rm, "-f", "-v")
		}
		if _, err := Run(append(rm, ids...)...); err != nil {
			return err
		}
	}
	return nil
}

// labelled lists the IDs of the objects of one kind that carry the node's label, stopped containers included.
func labelled(kind, node string) ([]string, error) {
	args := []string{kind, "ls", "-q", "--filter", "label=" + dsv1alpha1.LabelNode + "=" + node}
	if kind == "container" {
		args = append(args, "-a")
	}
	out, err := Run(args...)
	return strings.Fields(out), err
}
