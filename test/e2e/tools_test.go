//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"

	"github.com/dockside-dev/dockside/test/dockercli"
)

// kubectl runs the kubectl built with the control plane against it and returns its standard output.
func kubectl(args ...string) (string, error) {
	return kubectlIn("", args...)
}

// kubectlIn is kubectl with a manifest on standard input.
func kubectlIn(stdin string, args ...string) (string, error) {
	cmd := exec.Command(cp.KubectlPath, append([]string{"--kubeconfig=" + cp.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// docker runs the Docker CLI: the tests check what Docker itself recorded, not what the agent believes.
func docker(args ...string) (string, error) { return dockercli.Run(args...) }

func dockerReachable() error {
	if _, err := docker("version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("Docker is not reachable: start the daemon or set DOCKER_HOST (%w)", err)
	}
	return nil
}
