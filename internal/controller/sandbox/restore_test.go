package sandbox

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
	"github.com/dockside-dev/dockside/internal/topology"
)

// Checkpoint the restore tests start from: its archive holds notes.txt.
const (
	checkpointName = "ckpt"
	checkpointNote = "kept across Sandboxes\n"
)

// withArchives gives the reconciler a checkpoint store holding the archive of checkpointName and returns
// what the Checkpoint records of it.
func (h *harness) withArchives() archive.Archive {
	h.t.Helper()
	store, err := archive.Open(h.t.TempDir(), archive.Limits{Store: 1 << 20})
	h.noErr(err)
	f, err := store.Create(1<<20, testNS)
	h.noErr(err)
	_, err = io.Copy(f, tarball.Of(h.t, map[string]string{"notes.txt": checkpointNote}))
	h.noErr(err)
	a, err := store.Commit(f, "uid-ckpt")
	h.noErr(err)
	h.r.Archives = store
	return a
}

// newCheckpoint is checkpointName in the given phase, stored on node.
func newCheckpoint(phase dsv1alpha1.CheckpointPhase, node string, a archive.Archive) *dsv1alpha1.Checkpoint {
	return &dsv1alpha1.Checkpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: checkpointName, UID: "uid-ckpt"},
		Spec:       dsv1alpha1.CheckpointSpec{SandboxName: "source"},
		Status: dsv1alpha1.CheckpointStatus{
			Phase: phase, NodeName: node, Digest: a.Digest, SizeBytes: a.Size,
			Conditions: []metav1.Condition{{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "CaptureFailed", Message: "the capture broke"}},
		},
	}
}

// readFile reads one file out of a container, as Docker's archive API gives it.
func (h *harness) readFile(container, path string) string {
	h.t.Helper()
	rc, err := h.docker.CopyFrom(h.ctx, container, path)
	h.noErr(err)
	defer rc.Close()
	return tarball.First(h.t, rc)
}

func TestEnsureRestored(t *testing.T) {
	restoring := func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.RestoreFrom = checkpointName }
	// a Checkpoint whose archive is in the store only once the case's docker setup made it so
	stored := func(phase dsv1alpha1.CheckpointPhase, node string) func(h *harness, s *scope) {
		return func(h *harness, s *scope) {
			h.makeWorkspace(s)
			ckpt := newCheckpoint(phase, node, h.withArchives())
			h.noErr(h.client.Create(h.ctx, ckpt))
			h.noErr(h.client.Status().Update(h.ctx, ckpt))
		}
	}
	notCopied := func(g Gomega, h *harness, s *scope) {
		g.Expect(h.docker.Calls(fake.OpCopyTo)).To(BeZero())
	}
	restoredAs := func(on bool, reason string) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			notCopied(g, h, s)
			c := condition(s.sbx, dsv1alpha1.ConditionRestored)
			g.Expect(c.Status).To(Equal(map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[on]))
			g.Expect(c.Reason).To(Equal(reason))
		}
	}
	runStepCases(t, (*Reconciler).ensureRestored, []stepCase{
		{
			name:  "a Sandbox without restoreFrom has nothing to restore",
			sbx:   atTopology(newSandbox("s"), 1),
			check: notCopied,
		},
		{
			name:    "the Checkpoint's files are verified and copied into the workspace before anything starts",
			checked: true,
			sbx:     atTopology(newSandbox("s", restoring), 1),
			docker:  stored(dsv1alpha1.CheckpointReady, testNode),
			events:  []string{"Normal " + EventRestored},
			check: func(g Gomega, h *harness, s *scope) {
				c := condition(s.sbx, dsv1alpha1.ConditionRestored)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(dsv1alpha1.ReasonRestored))
				g.Expect(h.readFile(s.holderName(), topology.HolderMountPath+"/notes.txt")).To(Equal(checkpointNote))
			},
		},
		{
			name:   "a workspace restored already is not restored again",
			sbx:    withCondition(atTopology(newSandbox("s", restoring), 2), dsv1alpha1.ConditionRestored, true, dsv1alpha1.ReasonRestored, "copied"),
			docker: stored(dsv1alpha1.CheckpointReady, testNode),
			check:  notCopied,
		},
		{
			name: "a primary that exists proves the restore happened, though its record was lost",
			sbx:  atTopology(newSandbox("s", restoring), 1),
			docker: func(h *harness, s *scope) {
				stored(dsv1alpha1.CheckpointReady, testNode)(h, s)
				h.start(h.primarySpec(s))
			},
			check: func(g Gomega, h *harness, s *scope) {
				notCopied(g, h, s)
				c := condition(s.sbx, dsv1alpha1.ConditionRestored)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "the record is written again")
				g.Expect(c.Message).To(ContainSubstring(`Checkpoint "ckpt"`))
			},
		},
		{
			name:   "an agent without a checkpoint store cannot restore",
			sbx:    atTopology(newSandbox("s", restoring), 1),
			docker: func(h *harness, s *scope) { h.makeWorkspace(s) },
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonRestoreNotSupported},
			check:  notCopied,
		},
		{
			name:   "a Checkpoint that does not exist is waited for",
			sbx:    atTopology(newSandbox("s", restoring), 1),
			docker: func(h *harness, s *scope) { h.withArchives() },
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonCheckpointNotFound},
			check:  restoredAs(false, dsv1alpha1.ReasonCheckpointNotFound),
		},
		{
			name:   "a Checkpoint not Ready yet is waited for",
			sbx:    atTopology(newSandbox("s", restoring), 1),
			docker: stored(dsv1alpha1.CheckpointCapturing, testNode),
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonCheckpointNotReady},
			check:  restoredAs(false, dsv1alpha1.ReasonCheckpointNotReady),
		},
		{
			name:    "a failed Checkpoint is Stalled on, with its own words",
			sbx:     atTopology(newSandbox("s", restoring), 1),
			docker:  stored(dsv1alpha1.CheckpointFailed, testNode),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, stalled: true, reason: dsv1alpha1.ReasonCheckpointNotReady},
			message: "the capture broke",
			check:   restoredAs(false, dsv1alpha1.ReasonCheckpointNotReady),
		},
		{
			name:   "a Checkpoint stored on another node is Stalled on",
			sbx:    atTopology(newSandbox("s", restoring), 1),
			docker: stored(dsv1alpha1.CheckpointReady, "node-b"),
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxPending, stalled: true, reason: dsv1alpha1.ReasonCheckpointOnOtherNode},
			check:  restoredAs(false, dsv1alpha1.ReasonCheckpointOnOtherNode),
		},
		{
			name:    "a Checkpoint whose archive is not in the store is Stalled on",
			checked: true,
			sbx:     atTopology(newSandbox("s", restoring), 1),
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				h.withArchives()
				ckpt := newCheckpoint(dsv1alpha1.CheckpointReady, testNode, archive.Archive{Digest: "sha256:" + strings.Repeat("c", 64), Size: 10})
				h.noErr(h.client.Create(h.ctx, ckpt))
				h.noErr(h.client.Status().Update(h.ctx, ckpt))
			},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, stalled: true, reason: dsv1alpha1.ReasonRestoreFailed},
			message: archive.ErrMissing.Error(),
			check:   restoredAs(false, dsv1alpha1.ReasonRestoreFailed),
		},
		{
			name:    "Docker unavailable while copying: retried",
			checked: true,
			sbx:     atTopology(newSandbox("s", restoring), 1),
			docker:  stored(dsv1alpha1.CheckpointReady, testNode),
			faults:  func(h *harness) { h.docker.FailNext(fake.OpCopyTo, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "copying Checkpoint ckpt into the workspace failed",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(condition(s.sbx, dsv1alpha1.ConditionRestored).Status).To(BeEmpty())
			},
		},
	})
}

// slowCopies is the daemon with copies into containers that block until release is closed (or their context
// ends), saying on started when each begins and on cut when one is cut short.
type slowCopies struct {
	dd.Driver
	started, cut chan string
	release      chan struct{}
}

func (d *slowCopies) CopyTo(ctx context.Context, name, dir string, tar io.Reader) error {
	d.started <- name
	select {
	case <-d.release:
	case <-ctx.Done():
		d.cut <- name
		return dd.NewError(dd.KindUncertain, dd.PhaseCopy, name, "the outcome is unknown")
	}
	return d.Driver.CopyTo(ctx, name, dir, tar)
}

// restoringHarness is a Sandbox restoring from a Ready Checkpoint of this node, on a daemon whose copies
// block until released.
func restoringHarness(t *testing.T) (*harness, *dsv1alpha1.Sandbox, *slowCopies) {
	sbx := newSandbox("s", func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.RestoreFrom = checkpointName })
	h := newHarness(t, sbx.DeepCopy())
	ckpt := newCheckpoint(dsv1alpha1.CheckpointReady, testNode, h.withArchives())
	h.noErr(h.client.Create(h.ctx, ckpt))
	h.noErr(h.client.Status().Update(h.ctx, ckpt))
	slow := &slowCopies{Driver: h.view, started: make(chan string, 10), cut: make(chan string, 10), release: make(chan struct{})}
	h.r.Driver = slow
	return h, sbx, slow
}

// TestReconcileDoesNotWaitForARestore: a pass over a Sandbox whose restore's copy blocks returns at once,
// saying it is Restoring, and holds no worker while the copy runs; a pass meanwhile starts no second copy;
// the copy's end wakes the Sandbox, and the pass that wake brings records the restore and starts the primary.
func TestReconcileDoesNotWaitForARestore(t *testing.T) {
	g := NewWithT(t)
	h, sbx, slow := restoringHarness(t)

	for range 2 { // the topology; then the workspace and the restore
		start := time.Now()
		_, err := h.pass(sbx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "the pass waited for the copy")
	}
	g.Eventually(slow.started).Should(Receive(Equal(topology.NamesOf(sbx).Holder())))
	got := h.get(sbx)
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxStarting))
	ready := condition(got, dsv1alpha1.ConditionReady)
	g.Expect(ready.Reason).To(Equal(dsv1alpha1.ReasonRestoring))
	g.Expect(ready.Message).To(ContainSubstring(`Checkpoint "ckpt"`))

	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Consistently(slow.started, 100*time.Millisecond).ShouldNot(Receive(), "a pass while the copy runs starts no other")
	g.Expect(h.requeues).To(BeEmpty(), "nothing wakes the Sandbox before the copy ends")

	close(slow.release)
	h.woken(sbx)
	_, err = h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	got = h.get(sbx)
	g.Expect(condition(got, dsv1alpha1.ConditionRestored).Reason).To(Equal(dsv1alpha1.ReasonRestored))
	g.Expect(h.readFile(topology.NamesOf(got).Holder(), topology.HolderMountPath+"/notes.txt")).To(Equal(checkpointNote))
	g.Expect(h.container(topology.NamesOf(got).Primary()).State).To(Equal(dd.StateRunning))
	g.Expect(isReady(got)).To(BeTrue())
	g.Expect(recorder.Drain(h.events)).To(ContainElement("Normal " + EventRestored))
}

// TestDeletionCancelsARestore: deleting a Sandbox whose restore runs cuts the copy short, and its outcome is
// dropped without a wake.
func TestDeletionCancelsARestore(t *testing.T) {
	g := NewWithT(t)
	h, sbx, slow := restoringHarness(t)
	for range 2 {
		_, err := h.pass(sbx)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Eventually(slow.started).Should(Receive())

	h.noErr(h.client.Delete(h.ctx, h.get(sbx)))
	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.get(sbx)).To(BeNil(), "deleted")
	g.Eventually(slow.cut).Should(Receive(), "the copy was cut short")
	g.Expect(h.r.restores.Pending(sbx.UID)).To(BeFalse(), "its outcome was dropped")
	g.Consistently(h.requeues, 100*time.Millisecond).Should(BeEmpty())
}
