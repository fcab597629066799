// Package kubectlcli is kubectl as the end-to-end tests and the deploy tests use it: the kubectl built with the
// local control plane (hack/build-controlplane.sh), acting with a kubeconfig of the test's own, as the person
// deploying or using Dockside would.
package kubectlcli

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// Kubectl is one kubectl binary and the kubeconfig it acts with.
type Kubectl struct {
	Path       string
	Kubeconfig string
}

// Run runs `kubectl args...` and returns its standard output; a failure carries what kubectl said.
func (k Kubectl) Run(args ...string) (string, error) {
	return k.RunWithInput("", args...)
}

// RunWithInput is Run with stdin on kubectl's standard input (a manifest for `apply -f -`).
func (k Kubectl) RunWithInput(stdin string, args ...string) (string, error) {
	cmd := exec.Command(k.Path, append([]string{"--kubeconfig=" + k.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}
