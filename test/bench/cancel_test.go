package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// cancelRounds is how many running Executions are deleted; each cancel stops its Sandbox's container (the
// rule for a command whose end is unknown), so every round has a Sandbox of its own.
const cancelRounds = 10

// stopPoll is how often Docker is asked whether a container still runs; it bounds the figures' resolution.
const stopPoll = 20 * time.Millisecond

// BenchmarkExecutionCancel times, from the delete of a running Execution to Docker saying the Sandbox's
// container no longer runs, against docker kill of a plain container of the same image to the same moment.
func BenchmarkExecutionCancel(b *testing.B) {
	e, ns := benchNamespace(b, "cancel")
	ctx := context.Background()
	var dockside, baseline []time.Duration
	for i := range cancelRounds {
		d, err := e.cancelOnce(ctx, ns, fmt.Sprintf("cancel-%d", i))
		if err != nil {
			b.Fatal(err)
		}
		id, err := dockerRun(runArgs(e.node, "none", busybox))
		if err != nil {
			b.Fatal(err)
		}
		p, err := timed(func() error {
			if _, err := docker("kill", id); err != nil {
				return err
			}
			return waitStopped(id)
		})
		if err != nil {
			b.Fatal(err)
		}
		dockside, baseline = append(dockside, d), append(baseline, p)
	}
	record(b, group{
		Key: "cancel", Title: fmt.Sprintf("Execution cancel, delete of a running Execution to its container stopped, %d rounds", cancelRounds),
		Baseline: "docker kill of a plain container of the same image, to the same moment",
		Figures:  startupFigures(dockside, baseline, "≤ 1.5 s"),
	})
}

// cancelOnce starts a session Sandbox named name, runs a long command in it through an Execution, and
// returns how long after the Execution's delete Docker said the Sandbox's container had stopped.
func (e *env) cancelOnce(ctx context.Context, ns, name string) (time.Duration, error) {
	sbx := session(ns, name)
	if err := e.applyAndRead(ctx, sbx); err != nil {
		return 0, err
	}
	ex := &dsv1alpha1.Execution{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.ExecutionSpec{SandboxName: name, Command: []string{"sleep", "3600"}},
	}
	if err := e.k8s.Create(ctx, ex); err != nil {
		return 0, err
	}
	for deadline := time.Now().Add(time.Minute); ex.Status.Phase != dsv1alpha1.ExecutionRunning; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("Execution %s/%s not Running after a minute: %s\n%s", ns, name, conditions(ex.Status.Conditions), e.agent.LogTail())
		}
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return 0, err
		}
	}
	return timed(func() error {
		if err := e.k8s.Delete(ctx, ex); err != nil {
			return err
		}
		return waitStopped(sbx.Status.ContainerID)
	})
}

// waitStopped polls Docker until the container no longer runs, for at most a minute.
func waitStopped(id string) error {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(stopPoll) {
		running, err := docker("inspect", "-f", "{{.State.Running}}", id)
		switch {
		case err != nil:
			return err
		case running == "false":
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("container %s still runs a minute on", id)
		}
	}
}
