package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const (
	// floodExecutions is how many Executions are created at once on one session.
	floodExecutions = 100
	// floodClients is how many clients create them.
	floodClients = 16
)

// BenchmarkExecutionFlood creates floodExecutions Executions at once on one busybox session (`echo N`, each
// its own N) and times them from the first create to the last one seen Succeeded as a watch delivers it: the
// Sandbox's queue runs them one at a time, so this is the queue's hand-off, the status writes and the output's
// read-back, floodExecutions times. The baseline is `docker exec` of the same commands one after another in
// the Sandbox's container, run before and after the flood (the mean of the two stands against it, so that a
// change of the machine's load during the run hits both sides alike). Each Execution's output is checked.
func BenchmarkExecutionFlood(b *testing.B) {
	e, ns := benchNamespace(b, "flood")
	ctx := context.Background()
	sbx := session(ns, "flood")
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	ended, err := newTracker(ctx, e.cfg, "Execution", &dsv1alpha1.Execution{})
	if err != nil {
		b.Fatal(err)
	}
	execAll := func() (time.Duration, error) {
		return timed(func() error {
			for i := range floodExecutions {
				if _, err := docker("exec", sbx.Status.ContainerID, "echo", strconv.Itoa(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	first, err := execAll()
	if err != nil {
		b.Fatal(err)
	}
	before, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := createFlood(ctx, e.k8s, sbx); err != nil {
		b.Fatal(err)
	}
	var last time.Time
	for i := range floodExecutions {
		at, err := ended.waitReady(ctx, floodKey(ns, i))
		if err != nil {
			b.Fatal(err)
		}
		last = maxTime(last, at)
	}
	flood := last.Sub(start)
	after, err := e.snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := checkFlood(ctx, e.k8s, ns); err != nil {
		b.Fatal(err)
	}
	second, err := execAll()
	if err != nil {
		b.Fatal(err)
	}
	baseline := (first + second) / 2
	perExecution := func(v float64) *float64 { return num(v / floodExecutions) }
	calls := diff(after.dockerCalls, before.dockerCalls)
	record(b, group{
		Key:      "exec-flood",
		Title:    fmt.Sprintf("%d Executions created at once on one session, `echo N`", floodExecutions),
		Baseline: fmt.Sprintf("%d docker exec of the same commands one after another, the mean of a run before and one after (%.2f s, %.2f s)", floodExecutions, first.Seconds(), second.Seconds()),
		Figures: []figure{
			{Name: "all ended", Unit: "s", Dockside: seconds(flood), Baseline: seconds(baseline), Goal: "within 1.3x"},
			{Name: "per Execution", Unit: "s", Dockside: seconds(flood / floodExecutions), Baseline: seconds(baseline / floodExecutions)},
			{Name: "API writes (dockside.dev) per Execution", Unit: "writes", Dockside: perExecution(after.docksideWrites - before.docksideWrites),
				Note: "the client's create included"},
			{Name: "driver calls per Execution", Unit: "calls", Dockside: perExecution(total(calls)), Note: "by operation: " + describe(calls)},
		},
	})
}

// floodKey names the i-th Execution of the flood.
func floodKey(ns string, i int) client.ObjectKey {
	return client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("flood-%03d", i)}
}

// createFlood creates the flood's Executions from floodClients clients at once, owned by their Sandbox as
// pkg/execution makes them.
func createFlood(ctx context.Context, k8s client.Client, sbx *dsv1alpha1.Sandbox) error {
	next, errs := make(chan int), make(chan error, floodExecutions)
	var wg sync.WaitGroup
	for range floodClients {
		wg.Go(func() {
			for i := range next {
				key := floodKey(sbx.Namespace, i)
				errs <- k8s.Create(ctx, &dsv1alpha1.Execution{
					ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, OwnerReferences: []metav1.OwnerReference{{
						APIVersion: dsv1alpha1.GroupVersion.String(), Kind: "Sandbox", Name: sbx.Name, UID: sbx.UID, Controller: ptr.To(true),
					}}},
					Spec: dsv1alpha1.ExecutionSpec{SandboxName: sbx.Name, Command: []string{"echo", strconv.Itoa(i)}},
				})
			}
		})
	}
	for i := range floodExecutions {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkFlood checks that every Execution of the flood printed its own number.
func checkFlood(ctx context.Context, k8s client.Client, ns string) error {
	for i := range floodExecutions {
		ex := &dsv1alpha1.Execution{}
		if err := k8s.Get(ctx, floodKey(ns, i), ex); err != nil {
			return err
		}
		if want := strconv.Itoa(i) + "\n"; ex.Status.Stdout != want {
			return fmt.Errorf("execution %s printed %q, want %q", ex.Name, ex.Status.Stdout, want)
		}
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
