package tracing_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dockside-dev/dockside/internal/tracing"
)

func TestCallerParentIsTraceparentWhenValidElseNew(t *testing.T) {
	given := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	env := map[string]string{"TRACEPARENT": given}
	sc := tracing.CallerParent(func(k string) string { return env[k] })
	if got := sc.TraceID().String() + "/" + sc.SpanID().String(); got != "0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331" {
		t.Errorf("from TRACEPARENT %s: got %s", given, got)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01"} {
		env["TRACEPARENT"] = bad
		a, b := tracing.CallerParent(func(k string) string { return env[k] }), tracing.CallerParent(func(k string) string { return env[k] })
		if !a.IsValid() || !a.IsSampled() || a.TraceID() == b.TraceID() {
			t.Errorf("TRACEPARENT=%q: want a new sampled trace each time, got %v and %v", bad, a, b)
		}
	}
}

func TestPropagatingSendsTheParentOnEveryRequest(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	given := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	c := &http.Client{Transport: tracing.Propagating(http.DefaultTransport,
		tracing.CallerParent(func(k string) string { return map[string]string{"TRACEPARENT": given}[k] }))}
	for range 2 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.Header.Get("traceparent") != "" {
			t.Error("the caller's request was changed")
		}
	}
	if len(got) != 2 || got[0] != given || got[1] != given {
		t.Errorf("traceparent received %q, want %q twice", got, given)
	}
}
