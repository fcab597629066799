package e2b

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process"
	"github.com/dockside-dev/dockside/internal/testutil/unavailableapi"
)

// flakyAPI is fakeAPI behind kube-apiserver's aggregator holding the data plane unavailable for its first n
// data plane calls.
func flakyAPI(t *testing.T, n int) *unavailableapi.Server {
	t.Helper()
	api, _ := fakeAPI(t)
	return unavailableapi.Start(t, unavailableapi.DataPlane, n, api.Config.Handler)
}

// A Start that the aggregator answered unavailable reached no agent: the gateway sends it again, and the SDK
// sees the process run, not Connect's unavailable.
func TestStartIsSentAgainWhileTheAggregatorHoldsTheDataPlaneUnavailable(t *testing.T) {
	g := NewWithT(t)
	api := flakyAPI(t, 3)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	stream := startProcess(t, gw.URL, nil, "echo", "hi")
	var out strings.Builder
	var end *process.ProcessEvent_EndEvent
	for stream.Receive() {
		out.Write(stream.Msg().GetEvent().GetData().GetStdout())
		if e := stream.Msg().GetEvent().GetEnd(); e != nil {
			end = e
		}
	}
	g.Expect(stream.Err()).NotTo(HaveOccurred())
	g.Expect(api.Refused()).To(Equal(3))
	g.Expect(out.String()).To(Equal("hi\n"))
	g.Expect(end.GetExitCode()).To(BeEquivalentTo(3))
}

// waitServed outlasts the transport's own tries while the aggregator still answers unavailable, takes any
// other answer as the data plane's, and gives up with E2B's 504 at its deadline.
func TestWaitServedWaitsOutTheAggregatorOnly(t *testing.T) {
	g := NewWithT(t)
	api := flakyAPI(t, 12) // more than one call's five tries
	gw := newTestGateway(t, api.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := gw.ids.resolve(ctx, "key-a")
	g.Expect(err).NotTo(HaveOccurred())
	sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sbx"}}
	// fakeAPI answers the list 404 (not a process it knows): the data plane answered.
	g.Expect(gw.waitServed(ctx, c, sbx)).To(Succeed())
	g.Expect(api.Refused()).To(Equal(12))

	api = flakyAPI(t, 1<<30)
	gw = newTestGateway(t, api.URL)
	gw.createWait = 2 * time.Second
	c, err = gw.ids.resolve(ctx, "key-a")
	g.Expect(err).NotTo(HaveOccurred())
	short, cancelShort := context.WithTimeout(ctx, gw.createWait)
	defer cancelShort()
	err = gw.waitServed(short, c, sbx)
	var ae *apiError
	g.Expect(errors.As(err, &ae)).To(BeTrue(), "%v", err)
	g.Expect(ae.Code).To(Equal(http.StatusGatewayTimeout))
	g.Expect(ae.Message).To(ContainSubstring("did not serve it within 2s"))

	// A lazy Sandbox not yet started is not asked, since a call would start it.
	lazy := sbx.DeepCopy()
	lazy.Status.Conditions = []metav1.Condition{{Type: dsv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: dsv1alpha1.ReasonLazy}}
	g.Expect(gw.waitServed(ctx, c, lazy)).To(Succeed())
}
