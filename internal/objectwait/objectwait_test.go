package objectwait

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func newClient(g *WithT, objs ...client.Object) client.WithWatch {
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build()
}

func succeeded(ex *dsv1alpha1.Execution) (bool, error) {
	return ex.Status.Phase == dsv1alpha1.ExecutionSucceeded, nil
}

// TestUntilFollowsTheWatch: done already on the first read returns at once; otherwise a change seen by the
// watch ends the wait with the object as changed.
func TestUntilFollowsTheWatch(t *testing.T) {
	g := NewWithT(t)
	ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", UID: "u1"}}
	c := newClient(g, ex)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		time.Sleep(100 * time.Millisecond)
		cur := &dsv1alpha1.Execution{}
		_ = c.Get(ctx, client.ObjectKeyFromObject(ex), cur)
		cur.Status.Phase = dsv1alpha1.ExecutionSucceeded
		_ = c.Status().Update(ctx, cur)
	}()
	got, err := Until(ctx, c, ex.DeepCopy(), &dsv1alpha1.ExecutionList{}, "Execution", succeeded)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))

	got, err = Until(ctx, c, ex.DeepCopy(), &dsv1alpha1.ExecutionList{}, "Execution", succeeded)
	g.Expect(err).NotTo(HaveOccurred(), "done on the first read")
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.ExecutionSucceeded))
}

// TestUntilEndsOnDeletionFailureAndContext: a deletion, another object of the name, done's error and the
// caller's context each end the wait, the last as the context's own error.
func TestUntilEndsOnDeletionFailureAndContext(t *testing.T) {
	g := NewWithT(t)
	ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e", UID: "u1"}}
	c := newClient(g, ex)
	ctx := context.Background()

	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = c.Delete(ctx, ex.DeepCopy())
	}()
	_, err := Until(ctx, c, ex.DeepCopy(), &dsv1alpha1.ExecutionList{}, "Execution", succeeded)
	g.Expect(err).To(MatchError(ErrDeleted))
	g.Expect(err).To(MatchError("Execution e was deleted"))

	other := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e"}}
	g.Expect(c.Create(ctx, other)).To(Succeed())
	_, err = Until(ctx, c, ex.DeepCopy(), &dsv1alpha1.ExecutionList{}, "Execution", succeeded)
	g.Expect(err).To(MatchError(ErrDeleted), "another Execution of the same name is not the one waited for")

	refused := errors.New("stalled")
	_, err = Until(ctx, c, other.DeepCopy(), &dsv1alpha1.ExecutionList{}, "Execution", func(*dsv1alpha1.Execution) (bool, error) { return false, refused })
	g.Expect(err).To(MatchError(refused))

	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = Until(short, c, other.DeepCopy(), &dsv1alpha1.ExecutionList{}, "Execution", succeeded)
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
}
