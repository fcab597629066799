package e2b

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process"
)

// TestQuietProcessesGetKeepalives runs a process that writes nothing until the client has seen a keepalive:
// the fake API server holds its output until then, so the test does not depend on how fast anything runs.
func TestQuietProcessesGetKeepalives(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	var ended atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			_, _ = io.WriteString(w, `{"status":{"userInfo":{"username":"system:serviceaccount:ns-a:agent"}}}`)
		case r.Method == http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{}`)
		case strings.HasSuffix(r.URL.Path, "/stdout") || strings.HasSuffix(r.URL.Path, "/stderr"):
			w.Header().Set("X-Dockside-Output-Start", "0")
			select {
			case <-release:
			case <-r.Context().Done():
			}
			ended.Store(true)
		default:
			if ended.Load() {
				_, _ = io.WriteString(w, `{"running":false,"exitCode":0}`)
			} else {
				_, _ = io.WriteString(w, `{"running":true}`)
			}
		}
	}))
	defer api.Close()
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()

	stream := startProcess(t, gw.URL, http.Header{"Keepalive-Ping-Interval": {"1"}}, "sleep", "1")
	var keepalives int
	var end *process.ProcessEvent_EndEvent
	for stream.Receive() {
		ev := stream.Msg().GetEvent()
		if ev.GetKeepalive() != nil {
			keepalives++
			if keepalives == 1 {
				close(release)
			}
		}
		if ev.GetEnd() != nil {
			end = ev.GetEnd()
		}
	}
	g.Expect(stream.Err()).NotTo(HaveOccurred())
	g.Expect(keepalives).To(BeNumerically(">=", 1))
	g.Expect(end).NotTo(BeNil())
	g.Expect(end.GetExited()).To(BeTrue())
}
