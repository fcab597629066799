package sandboxclaim

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func sandboxAt(uid types.UID, version string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{UID: uid, ResourceVersion: version}}
}

func TestTakeSkipsWhatAnotherPassTookAtTheSameVersion(t *testing.T) {
	f, pool := newInFlight(), types.NamespacedName{Namespace: "ns", Name: "p"}
	if !f.take(sandboxAt("a", "1"), pool) {
		t.Fatal("a free Sandbox was not taken")
	}
	if f.take(sandboxAt("a", "1"), pool) {
		t.Fatal("a second pass took a Sandbox another pass holds at the version it sees")
	}
	if !f.take(sandboxAt("b", "1"), pool) {
		t.Fatal("another Sandbox was refused")
	}
	if !f.take(sandboxAt("a", "2"), pool) {
		t.Fatal("a Sandbox changed since it was taken is the API server's to decide, not refused here")
	}
}

func TestUntakeGivesBackOnlyItsOwnTake(t *testing.T) {
	f, pool := newInFlight(), types.NamespacedName{Namespace: "ns", Name: "p"}
	f.take(sandboxAt("a", "1"), pool)
	f.take(sandboxAt("a", "2"), pool) // a later pass, at a newer version
	f.untake(sandboxAt("a", "ignored"), "1")
	if f.take(sandboxAt("a", "2"), pool) {
		t.Fatal("a failed pass gave back the later pass's take")
	}
	f.untake(sandboxAt("a", "ignored"), "2")
	if !f.take(sandboxAt("a", "2"), pool) {
		t.Fatal("a failed binding's Sandbox stayed taken")
	}
}

func TestPruneForgetsWhatTheCacheShowsChangedOrGone(t *testing.T) {
	f := newInFlight()
	pool, other := types.NamespacedName{Namespace: "ns", Name: "p"}, types.NamespacedName{Namespace: "ns", Name: "q"}
	f.take(sandboxAt("same", "1"), pool)
	f.take(sandboxAt("moved", "1"), pool)
	f.take(sandboxAt("gone", "1"), pool)
	f.take(sandboxAt("elsewhere", "1"), other)
	f.prune(pool, map[types.UID]string{"same": "1", "moved": "2"})
	if len(f.sandboxes) != 2 || f.sandboxes["same"].version != "1" || f.sandboxes["elsewhere"].version != "1" {
		t.Fatalf("after prune: %v; want the unchanged one and the other pool's", f.sandboxes)
	}
}

func TestABoundClaimIsUnseenUntilSeenAndOnlyForItsUID(t *testing.T) {
	f := newInFlight()
	claim := &dsv1alpha1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u1"}}
	if f.unseen(claim) {
		t.Fatal("a claim no pass bound is unseen")
	}
	f.bound(claim)
	if !f.unseen(claim) {
		t.Fatal("a claim just bound is not unseen")
	}
	again := claim.DeepCopy()
	again.UID = "u2"
	if f.unseen(again) {
		t.Fatal("a claim made again under the same name inherits the old one's binding")
	}
	f.seen(types.NamespacedName{Namespace: "ns", Name: "c"})
	if f.unseen(claim) {
		t.Fatal("a claim seen bound is still unseen")
	}
}
