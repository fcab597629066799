// Package unavailableapi stands for kube-apiserver's aggregator while it holds the data plane's APIService
// unavailable, for the unit tests of the callers that send such calls again through
// internal/dataplane/unavailable (the kubectl plugin, the E2B gateway).
package unavailableapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dockside-dev/dockside/internal/dataplane/unavailable"
)

// DataPlane is the start of the aggregated data plane's paths (docs/design/dataplane.md).
const DataPlane = "/apis/subresources.dockside.dev/"

// Server counts the calls it was sent and those it answered unavailable.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	calls   int
	refused int
}

// Start starts a Server that answers the first n calls whose path starts with prefix as the aggregator
// answers while it holds the APIService unavailable (http.Error's 503 "service unavailable", in its
// handler_proxy.go), without passing them on, and every other call with next. Until the test ends,
// unavailable.Waits are 1 ms each, so that a caller's tries do not wait.
func Start(t testing.TB, prefix string, n int, next http.Handler) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refuse(strings.HasPrefix(r.URL.Path, prefix), n) {
			http.Error(w, "service unavailable", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	prev := unavailable.Waits
	unavailable.Waits = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}
	t.Cleanup(func() { unavailable.Waits = prev })
	return s
}

// refuse counts a call, and says whether it is answered unavailable: whether it is one the server may refuse
// (matches) and fewer than n were refused before it.
func (s *Server) refuse(matches bool, n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if !matches || s.refused >= n {
		return false
	}
	s.refused++
	return true
}

// Calls is how many calls the server was sent, refused or not.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Refused is how many calls the server answered unavailable.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}
