package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// serviceStarts is how many Sandboxes with one service are started, one at a time.
const serviceStarts = 10

// readinessPeriod is the service's readiness period, which the baseline's polling uses too.
const readinessPeriod = time.Second

// BenchmarkServiceStart times a session Sandbox behind one service with a readiness command, from apply to
// Ready, against the same steps by hand with the Docker CLI: create the network, run the service, run its
// readiness command until it passes, run the primary. Each is deleted before the next starts, so that
// neither runs short of network address space.
func BenchmarkServiceStart(b *testing.B) {
	e := dockerEnv(b)
	ctx := context.Background()
	ns, err := e.namespace(ctx, "svc")
	if err != nil {
		b.Fatal(err)
	}
	// The service is ready as soon as it runs, so that both sides time the orchestration, not a wait.
	svc := &dsv1alpha1.SandboxService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: dsv1alpha1.SandboxServiceSpec{
			Image: busybox, Command: []string{"sleep", "3600"},
			Readiness: &dsv1alpha1.Readiness{Command: []string{"true"}, PeriodSeconds: int32(readinessPeriod.Seconds()), FailureThreshold: 30},
		},
	}
	if err := e.k8s.Create(ctx, svc); err != nil {
		b.Fatal(err)
	}
	var dockside, baseline []time.Duration
	for i := range serviceStarts {
		sbx := session(ns, fmt.Sprintf("svc-%d", i))
		sbx.Spec.Services = []string{svc.Name}
		d, err := e.applyAndWait(ctx, sbx)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.k8s.Delete(ctx, sbx); err != nil {
			b.Fatal(err)
		}
		p, err := timed(func() error { return serviceByHand(e.node, fmt.Sprintf("%s-svc-%d", plainNode(e.node), i)) })
		if err != nil {
			b.Fatal(err)
		}
		if err := dockercli.RemoveLabelled(plainNode(e.node)); err != nil {
			b.Fatal(err)
		}
		if err := e.waitSandboxesGone(ctx, ns, 2*time.Minute); err != nil {
			b.Fatal(err)
		}
		dockside, baseline = append(dockside, d), append(baseline, p)
	}
	cleanUp(b, e, ns)
	record(b, group{
		Key: "service", Title: fmt.Sprintf("Start behind one service with a readiness command, %d one at a time", serviceStarts),
		Baseline: "docker network create, docker run the service, docker exec its readiness until it passes, docker run the primary",
		Figures:  startupFigures(dockside, baseline, "≤ 1.2x by hand"),
	})
}

// serviceByHand is what a person does with the Docker CLI for the same topology, on an internal network
// named network.
func serviceByHand(node, network string) error {
	if _, err := docker(append(append([]string{"network", "create", "--internal"}, baselineLabels(node)...), network)...); err != nil {
		return err
	}
	service, err := dockerRun(runArgs(node, network, "--network-alias", "db", busybox, "sleep", "3600"))
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(readinessPeriod) {
		if _, err := docker("exec", service, "true"); err == nil {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the service never passed readiness: %w", err)
		}
	}
	_, err = dockerRun(runArgs(node, network, busybox))
	return err
}
