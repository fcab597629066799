package bench

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/sandboxexec"
)

const (
	// resumeRounds is how many idle pauses the exec that resumes is timed on; each waits idleSeconds.
	resumeRounds = 8
	idleSeconds  = 5
)

// BenchmarkIdleResume times an exec of `true` through the data plane into a session its agent froze for
// idleness (spec.idlePauseSeconds, docs/design/idle-pause.md), which thaws it before it runs, against the
// same exec into the same Sandbox running, right after; the goal is at most 100 ms added at p50.
func BenchmarkIdleResume(b *testing.B) {
	e, ns := benchNamespace(b, "idle-resume")
	ctx := context.Background()
	sbx := session(ns, "dozy")
	sbx.Spec.IdlePauseSeconds = ptr.To[int32](idleSeconds)
	if _, err := e.applyAndWait(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	g := group{
		Key:      "idle-resume",
		Title:    fmt.Sprintf("Exec of true through the data plane into a session frozen after %d s idle (idlePauseSeconds), which the exec thaws first", idleSeconds),
		Baseline: "the same exec into the same Sandbox running, right after",
	}
	defer func() { record(b, g) }()
	trueExec, err := sandboxexec.Executor(e.cfg, "websocket", ns, sbx.Name, url.Values{"command": {"true"}, "stdout": {"true"}, "stderr": {"true"}})
	if err != nil {
		b.Fatal(err)
	}
	run := func() (time.Duration, error) { return timed(func() error { return execTo(ctx, trueExec, io.Discard) }) }
	var resumed, running []time.Duration
	for range resumeRounds {
		if err := e.waitIdlePaused(ctx, sbx, time.Minute); err != nil {
			b.Fatal(err)
		}
		r, err := run()
		if err != nil {
			b.Fatal(err)
		}
		w, err := run()
		if err != nil {
			b.Fatal(err)
		}
		resumed, running = append(resumed, r), append(running, w)
	}
	added := percentile(resumed, 50) - percentile(running, 50)
	g.Figures = append(g.Figures,
		figure{Name: fmt.Sprintf("exec of true, p50 of %d", resumeRounds), Unit: "s", Dockside: seconds(percentile(resumed, 50)), Baseline: seconds(percentile(running, 50))},
		figure{Name: fmt.Sprintf("exec of true, p95 of %d", resumeRounds), Unit: "s", Dockside: seconds(percentile(resumed, 95)), Baseline: seconds(percentile(running, 95))},
		figure{Name: "latency the resume adds, p50 less p50", Unit: "s", Dockside: seconds(added), Goal: "≤ 0.1 s"},
	)
}

// waitIdlePaused waits until the Sandbox's status says its agent froze it for idleness (written after the
// freeze).
func (e *env) waitIdlePaused(ctx context.Context, sbx *dsv1alpha1.Sandbox, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cur := &dsv1alpha1.Sandbox{}
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(sbx), cur); err != nil {
			return err
		}
		if dsv1alpha1.IdlePaused(cur) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sandbox %s was not frozen for idleness within %s: phase %s", sbx.Name, timeout, cur.Status.Phase)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
