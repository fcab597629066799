//go:build e2e

package e2e

import (
	"fmt"

	"github.com/dockside-dev/dockside/test/internal/dockercli"
	"github.com/dockside-dev/dockside/test/internal/kubectlcli"
)

// admin is the kubectl built with the control plane, acting against it as a cluster admin.
func admin() kubectlcli.Kubectl {
	return kubectlcli.Kubectl{Path: cp.KubectlPath, Kubeconfig: cp.Kubeconfig}
}

// kubectl runs kubectl as the admin and returns its standard output.
func kubectl(args ...string) (string, error) { return admin().Run(args...) }

// docker runs the Docker CLI: the tests check what Docker itself recorded, not what the agent believes.
func docker(args ...string) (string, error) { return dockercli.Run(args...) }

func dockerReachable() error {
	if _, err := docker("version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("Docker is not reachable: start the daemon or set DOCKER_HOST (%w)", err)
	}
	return nil
}
