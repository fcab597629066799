package dataplane

import (
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/testutil/spans"
)

// A call's span is the child of the traceparent it came with, and the root of a trace of its own without one;
// both before the caller is known, so that a refused call is traced too.
func TestACallsSpanIsTheChildOfItsTraceparent(t *testing.T) {
	g := NewWithT(t)
	collect := spans.Collect(t)
	s := &Server{}
	s.proxy.Store(&frontProxy{})
	for _, parent := range []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", ""} {
		r := httptest.NewRequest(http.MethodPost, resourcePrefix+"team/sandboxes/box/"+Files, nil)
		if parent != "" {
			r.Header.Set("traceparent", parent)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		g.Expect(w.Code).To(Equal(http.StatusUnauthorized), "no client certificate")
	}
	got := spans.Named(collect(), "dataplane.files")
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0].SpanContext.TraceID().String()).To(Equal("0af7651916cd43dd8448eb211c80319c"))
	g.Expect(got[0].Parent.SpanID().String()).To(Equal("b7ad6b7169203331"))
	g.Expect(got[0].Parent.IsRemote()).To(BeTrue())
	g.Expect(got[1].Parent.IsValid()).To(BeFalse(), "without a traceparent, a root")
	g.Expect(got[1].SpanContext.TraceID()).NotTo(Equal(got[0].SpanContext.TraceID()))
}
