package dataplane

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// An allowed decision is asked once per caller and request for a while; a refusal is asked every time, and so
// is anything that differs (another group, another Sandbox, another verb).
func TestAuthCache(t *testing.T) {
	g, ctx := NewWithT(t), context.Background()
	asked := 0
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			asked++
			sar := obj.(*authorizationv1.SubjectAccessReview)
			sar.Status.Allowed = sar.Spec.User == "alice"
			return nil
		},
	}).Build()
	a := newAuthCache()
	alice := Caller{Name: "alice", Groups: []string{"devs"}}
	for range 3 {
		denied, err := a.authorize(ctx, c, alice, "create", "ns", "box", Exec)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(denied).To(BeEmpty())
	}
	g.Expect(asked).To(Equal(1))
	_, _ = a.authorize(ctx, c, Caller{Name: "alice", Groups: []string{"devs", "ops"}}, "create", "ns", "box", Exec)
	_, _ = a.authorize(ctx, c, alice, "create", "ns", "other", Exec)
	_, _ = a.authorize(ctx, c, alice, "get", "ns", "box", Processes)
	g.Expect(asked).To(Equal(4), "each differs from the first")
	for range 2 {
		denied, err := a.authorize(ctx, c, Caller{Name: "mallory"}, "create", "ns", "box", Exec)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(denied).To(ContainSubstring(`User "mallory" cannot create`))
	}
	g.Expect(asked).To(Equal(6), "refusals are not kept")
}
