package checkpoint

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/archive"
)

func readyCondition(g *WithT, ckpt *dsv1alpha1.Checkpoint) string {
	c := meta.FindStatusCondition(ckpt.Status.Conditions, dsv1alpha1.ConditionReady)
	g.Expect(c).NotTo(BeNil())
	return c.Reason + ": " + c.Message
}

func TestANamespaceAtItsCapFailsTheCheckpointForGoodSayingUsedAndCap(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Recorder: events.NewFakeRecorder(10), Options: Options{Node: "n1"}}
	ckpt := &dsv1alpha1.Checkpoint{}
	res, err := r.storeRefused(ckpt, &archive.NamespaceQuotaError{Namespace: "team-a", Want: 5 << 20, Used: 3000, Limit: 2048})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeZero(), "for good")
	g.Expect(ckpt.Status.Phase).To(Equal(dsv1alpha1.CheckpointFailed))
	g.Expect(readyCondition(g, ckpt)).To(Equal("NamespaceCheckpointQuotaExceeded: the Checkpoints of namespace team-a stored on node n1 hold 3000 bytes of the 2048 bytes the agent allows a namespace there (--checkpoint-bytes-per-namespace); nothing was captured; delete Checkpoints of this namespace stored on node n1 to make room"))
}

func TestANamespaceWhoseCapturesUnderWayHoldItsRoomWaits(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Recorder: events.NewFakeRecorder(10), Options: Options{Node: "n1"}}
	ckpt := &dsv1alpha1.Checkpoint{}
	res, err := r.storeRefused(ckpt, &archive.NamespaceQuotaError{Namespace: "team-a", Want: 600, Used: 0, Reserved: 600, Limit: 1000})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(storeRetry))
	g.Expect(ckpt.Status.Phase).To(Equal(dsv1alpha1.CheckpointCapturing))
	g.Expect(readyCondition(g, ckpt)).To(HavePrefix("WaitingForStore: waiting for captures under way in namespace team-a on node n1: "))
}
