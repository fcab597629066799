package dataplane

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// watchingServer is a data plane whose cache holds sbx and whose watch of Sandboxes is the returned informer,
// whose events the test sends.
func watchingServer(t *testing.T, driver dd.Driver, sbx *dsv1alpha1.Sandbox) (*Server, *controllertest.FakeInformer) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	informers := &informertest.FakeInformers{Scheme: scheme}
	informer, err := informers.FakeInformerFor(t.Context(), &dsv1alpha1.Sandbox{})
	g.Expect(err).NotTo(HaveOccurred())
	s := &Server{
		opts:  Options{Client: ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(sbx.DeepCopy()).Build(), Driver: driver, Sandboxes: informers},
		calls: newCallRegistry(),
	}
	g.Expect(s.watchSandboxes(t.Context())).To(Succeed())
	return s, informer
}

// serveTracked serves handler as serveTarget does once it found sbx here: tracked for as long as it runs.
func serveTracked(t *testing.T, s *Server, sbx *dsv1alpha1.Sandbox, subresource string, handler http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w, r, leave := s.track(w, r, sbx, target{Namespace: sbx.Namespace, Name: sbx.Name, Subresource: subresource})
		defer leave()
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// execOver runs a silent command through the server at base with client-go's executor of protocol.
func execOver(ctx context.Context, protocol, base string) error {
	u, err := url.Parse(base + "/exec?command=sleep&command=300&stdout=true")
	if err != nil {
		return err
	}
	var exec remotecommand.Executor
	if protocol == "websocket" {
		exec, err = remotecommand.NewWebSocketExecutor(&rest.Config{Host: base}, "GET", u.String())
	} else {
		exec, err = remotecommand.NewSPDYExecutor(&rest.Config{Host: base}, "POST", u)
	}
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
}
