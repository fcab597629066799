package bench

import (
	"fmt"
	"sync"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// densityByHand starts with the Docker CLI what the agent builds for sandboxes, from scaleCreators workers
// at once, and returns the time from the first command to the last container running. Each Sandbox gets
// its workspace (a tmpfs volume), the holder keeping it and the primary; one with services gets a bridge of
// its own, internal like the agent's, and its services started and ready before the primary, as the
// agent orders them; an Isolated one without services joins one shared internal bridge with traffic between containers
// off. Everything carries the baselines' labels, so the agent never sees it and dockercli.RemoveLabelled finds it.
func densityByHand(node string, sandboxes []*dsv1alpha1.Sandbox) (time.Duration, error) {
	start := time.Now()
	shared := plainNode(node) + "-iso"
	if err := internalNetwork(node, shared, "", false); err != nil {
		return 0, err
	}
	next := make(chan int)
	errs := make([]error, len(sandboxes))
	var wg sync.WaitGroup
	for range scaleCreators {
		wg.Go(func() {
			for i := range next {
				errs[i] = sandboxByHand(node, sandboxes[i], i, shared)
			}
		})
	}
	for i := range sandboxes {
		next <- i
	}
	close(next)
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return took, nil
}

// sandboxByHand is one Sandbox of the density population by hand; i numbers it among them, which picks
// its own bridge's subnet.
func sandboxByHand(node string, sbx *dsv1alpha1.Sandbox, i int, shared string) error {
	name := plainNode(node) + "-" + sbx.Name
	volume := name + "-ws"
	if err := tmpfsVolume(node, volume); err != nil {
		return err
	}
	holderArgs := append(hardened(node, "none", "8m", "1", "16"), workspaceMount(volume)...)
	if _, err := dockerRun(append(holderArgs, holder)); err != nil {
		return err
	}
	network := "none"
	switch {
	case len(sbx.Spec.Services) > 0:
		network = name
		if err := internalNetwork(node, network, densityByHandSubnet(i), true); err != nil {
			return err
		}
		for _, svc := range sbx.Spec.Services {
			if err := densityServiceByHand(node, network, svc); err != nil {
				return err
			}
		}
	case sbx.Spec.Network.Mode == dsv1alpha1.NetworkIsolated:
		network = shared
	}
	primary := append([]string{"--hostname", sbx.Name}, workspaceMount(volume)...)
	if network != "none" {
		primary = append(primary, "--network-alias", sbx.Name)
	}
	_, err := dockerRun(runArgs(node, network, append(primary, busybox)...))
	return err
}

// densityServiceByHand starts the density benchmark's service (densityService) on network, under its
// name, with the default limits the agent gives a service, and runs its readiness command with docker exec
// until it passes, as the agent waits for it before the primary.
func densityServiceByHand(node, network, name string) error {
	svc := densityService("").Spec
	args := runArgs(node, network, "--hostname", name, "--network-alias", name, "--entrypoint", svc.Command[0], svc.Image)
	id, err := dockerRun(append(args, svc.Command[1:]...))
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(readinessPeriod) {
		if _, err := docker(append([]string{"exec", id}, svc.Readiness.Command...)...); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("service %s on %s never passed readiness: %w", name, network, err)
		}
	}
}

// internalNetwork creates a bridge without a route out, as the agent's for None and Isolated are, on subnet
// (Docker's choice when empty), with traffic between its containers on or off.
func internalNetwork(node, name, subnet string, icc bool) error {
	args := append([]string{"network", "create", "--driver", "bridge", "--internal",
		"--opt", fmt.Sprintf("com.docker.network.bridge.enable_icc=%t", icc)}, baselineLabels(node)...)
	if subnet != "" {
		args = append(args, "--subnet", subnet)
	}
	_, err := docker(append(args, name)...)
	return err
}

// densityByHandSubnet is the i-th /28 of 10.123.0.0/16: apart from the agent's pool (densityPool) and from
// Docker's default pools, which do not hold the population's 40 bridges (see densitySoloPerMode).
func densityByHandSubnet(i int) string {
	return fmt.Sprintf("10.123.%d.%d/28", i/16, i%16*16)
}
