package dataplane

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// A peer's call is for a Sandbox of the agent it reaches: one for a Sandbox of a third node is refused with
// the names of both nodes, never forwarded on, so a peer key reaches only the agents it names and through
// them only their own Sandboxes (decision 0030).
func TestAPeersCallForAnotherNodeIsNotForwardedOn(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	far := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "far"},
		Status:     dsv1alpha1.SandboxStatus{NodeName: "node-c", Phase: dsv1alpha1.SandboxRunning},
	}
	var asked []authorizationv1.SubjectAccessReviewSpec
	s := &Server{
		opts: Options{
			Node: "node-b",
			Client: sarAnswers(func(spec authorizationv1.SubjectAccessReviewSpec) bool {
				return spec.User == "alice" && spec.ResourceAttributes.Verb == "create"
			}, &asked),
			Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(far).Build(),
		},
		auth: newAuthCache(),
	}
	r := httptest.NewRequest(http.MethodPost, "/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/sandboxes/far/exec", nil)
	r.Header.Set(forwardedHeader, "node-a")
	w := httptest.NewRecorder()
	s.serveTarget(w, r, target{Namespace: "team-a", Name: "far", Subresource: Exec}, Caller{Name: "alice", ForwardedBy: "node-a"})
	g.Expect(w.Code).To(Equal(http.StatusBadGateway))
	g.Expect(w.Body.String()).To(ContainSubstring(`the agent of node node-a forwarded the call to this agent (node node-b), which does not run Sandbox \"far\" either`))
	g.Expect(asked).To(HaveLen(2), "alice was authorized as any peer's caller first: is she an administrator (no), may she exec (yes)")
}
