package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// checkpointMiB is the size of the random file the benchmark checkpoints and restores.
const checkpointMiB = 256

// checkpointGrace is how long an agent that has a Checkpoint controller takes at most to give a new
// Checkpoint a status; one that gives none has no such controller.
const checkpointGrace = 15 * time.Second

// errNotImplemented is a missing feature of the agent under test: reported, not failed.
var errNotImplemented = errors.New("not implemented by this agent")

// BenchmarkCheckpoint captures a session Sandbox's workspace holding 256 MiB of random data and restores it
// into a new Sandbox, against `docker cp` of the same data out of the Sandbox's container to the host and into
// a plain container's tmpfs volume. The restored bytes are compared with the originals.
func BenchmarkCheckpoint(b *testing.B) {
	e, ns := benchNamespace(b, "ckpt")
	ctx := context.Background()
	source := session(ns, "source")
	emptyStart, err := e.applyAndWait(ctx, source)
	if err != nil {
		b.Fatal(err)
	}
	primary, want, err := e.fillWorkspace(ctx, source)
	if err != nil {
		b.Fatal(err)
	}
	hostCopy := filepath.Join(runDir, "docker-cp")
	copyOut, err := timed(func() error { _, err := docker("cp", primary+":/workspace/.", hostCopy); return err })
	if err != nil {
		b.Fatal(err)
	}
	restoreByHand, err := timed(func() error {
		plain, err := plainWorkspace(e.node)
		if err != nil {
			return err
		}
		_, err = docker("cp", hostCopy+"/.", plain+":/workspace")
		return err
	})
	if err != nil {
		b.Fatal(err)
	}

	g := group{
		Key:      "checkpoint",
		Title:    fmt.Sprintf("Checkpoint and restore of a workspace holding %d MiB of random data", checkpointMiB),
		Baseline: "docker cp out of the Sandbox's running container to the host, and into a plain container's tmpfs volume",
	}
	defer func() { record(b, g) }()
	ckpt, captured, err := e.capture(ctx, ns, source.Name)
	if errors.Is(err, errNotImplemented) {
		g.Figures = append(g.Figures, notMeasured("capture and restore", "s", "checkpoint controller missing (the agent gave the Checkpoint no status)"))
		return
	} else if err != nil {
		b.Fatal(err)
	}
	frozen, err := pausedSpan(primary, ckpt.CreationTimestamp.Add(-time.Second), time.Now())
	if err != nil {
		b.Fatal(err)
	}
	g.Figures = append(g.Figures,
		figure{Name: "capture, apply → Ready", Unit: "s", Dockside: seconds(captured), Baseline: seconds(copyOut)},
		figure{Name: "capture throughput", Unit: "MB/s", Dockside: throughput(captured), Baseline: throughput(copyOut)},
		figure{Name: "Sandbox frozen, from Docker's pause and unpause events", Unit: "s", Dockside: seconds(frozen), Note: "docker cp does not freeze"},
		figure{Name: "Sandbox frozen, status.frozenDuration", Unit: "s", Dockside: durationOf(ckpt.Status.FrozenDuration)},
		figure{Name: "capture, status.captureDuration", Unit: "s", Dockside: durationOf(ckpt.Status.CaptureDuration)},
		figure{Name: "archive size", Unit: "MiB", Dockside: num(float64(ckpt.Status.SizeBytes) / mib)},
	)

	restored := session(ns, "restored")
	restored.Spec.RestoreFrom = ckpt.Name
	restoredIn, err := e.restore(ctx, restored)
	if errors.Is(err, errNotImplemented) {
		g.Figures = append(g.Figures, notMeasured("restore", "s", "this agent cannot restore yet (RestoreNotSupported)"))
		return
	} else if err != nil {
		b.Fatal(err)
	}
	got, err := docker("exec", restored.Status.ContainerID, "sha256sum", "/workspace/data")
	if err != nil || got != want {
		b.Fatalf("the restored workspace differs from the captured one: %q, want %q (%v)", got, want, err)
	}
	g.Figures = append(g.Figures,
		figure{Name: "restore, apply → Ready of a new Sandbox", Unit: "s", Dockside: seconds(restoredIn), Baseline: seconds(restoreByHand),
			Note: "baseline: a tmpfs volume, a container mounting it, docker cp in"},
		figure{Name: "restore throughput, start included", Unit: "MB/s", Dockside: throughput(restoredIn), Baseline: throughput(restoreByHand),
			Note: fmt.Sprintf("an empty Sandbox started in %.2f s here", emptyStart.Seconds())},
	)
}

// fillWorkspace writes checkpointMiB of random data to /workspace/data of the Ready Sandbox sbx and returns
// its primary container and the data's sha256sum line, which a restore must reproduce.
func (e *env) fillWorkspace(ctx context.Context, sbx *dsv1alpha1.Sandbox) (primary, sum string, err error) {
	if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(sbx), sbx); err != nil {
		return "", "", err
	}
	primary = sbx.Status.ContainerID
	if _, err := docker("exec", primary, "dd", "if=/dev/urandom", "of=/workspace/data", "bs=1M", fmt.Sprint("count=", checkpointMiB)); err != nil {
		return "", "", err
	}
	sum, err = docker("exec", primary, "sha256sum", "/workspace/data")
	return primary, sum, err
}

// plainWorkspace is a plain container with a tmpfs volume at /workspace, as a person would make one to
// restore files into by hand.
func plainWorkspace(node string) (string, error) {
	volume := plainNode(node) + "-workspace"
	if err := tmpfsVolume(node, volume); err != nil {
		return "", err
	}
	return dockerRun(runArgs(node, "none", append(workspaceMount(volume), busybox)...))
}

// capture creates a Checkpoint of the Sandbox named sandbox and waits for it to be Ready. It returns
// errNotImplemented when no agent gives the Checkpoint any status within checkpointGrace.
func (e *env) capture(ctx context.Context, ns, sandbox string) (*dsv1alpha1.Checkpoint, time.Duration, error) {
	ckpt := &dsv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ckpt"}, Spec: dsv1alpha1.CheckpointSpec{SandboxName: sandbox}}
	start := time.Now()
	if err := e.k8s.Create(ctx, ckpt); err != nil {
		return nil, 0, err
	}
	for deadline := start.Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(ckpt), ckpt); err != nil {
			return nil, 0, err
		}
		st := ckpt.Status
		switch {
		case meta.IsStatusConditionTrue(st.Conditions, dsv1alpha1.ConditionReady):
			return ckpt, time.Since(start), nil
		case st.Phase == dsv1alpha1.CheckpointFailed:
			return nil, 0, fmt.Errorf("the Checkpoint failed: %s\n%s", conditions(st.Conditions), e.agent.LogTail())
		case st.ObservedGeneration == 0 && st.Phase == "" && time.Since(start) > checkpointGrace:
			return nil, 0, errNotImplemented
		}
	}
	return nil, 0, fmt.Errorf("the Checkpoint was not Ready after 5 minutes: %s", conditions(ckpt.Status.Conditions))
}

// restore creates sbx (which names a Checkpoint) and waits for it to be Ready; errNotImplemented when the
// agent says it cannot restore.
func (e *env) restore(ctx context.Context, sbx *dsv1alpha1.Sandbox) (time.Duration, error) {
	start := time.Now()
	if err := e.k8s.Create(ctx, sbx); err != nil {
		return 0, err
	}
	for deadline := start.Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(sbx), sbx); err != nil {
			return 0, err
		}
		ready := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
		switch {
		case ready != nil && ready.Status == metav1.ConditionTrue:
			return time.Since(start), nil
		case ready != nil && ready.Reason == dsv1alpha1.ReasonRestoreNotSupported:
			return 0, errNotImplemented
		case meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionStalled):
			return 0, fmt.Errorf("the restoring Sandbox stalled: %s\n%s", conditions(sbx.Status.Conditions), e.agent.LogTail())
		}
	}
	return 0, fmt.Errorf("the restoring Sandbox was not Ready after 5 minutes: %s", conditions(sbx.Status.Conditions))
}

func conditions(cs []metav1.Condition) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// throughput is the checkpointed data over d, in MB/s (10^6 bytes).
func throughput(d time.Duration) *float64 {
	return num(checkpointMiB * mib / 1e6 / d.Seconds())
}

func durationOf(d *metav1.Duration) *float64 {
	if d == nil {
		return nil
	}
	return seconds(d.Duration)
}
