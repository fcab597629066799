// Package memregistry serves go-containerregistry's in-memory OCI registry on 127.0.0.1, the registry the tests
// and the benchmark of Checkpoints in a registry give their agents (docs/design/checkpoints.md, "Checkpoints in
// a registry"): plain HTTP on loopback, which the agents' --checkpoint-registry-plain-http allows, and nothing
// kept after the test. It lives under internal/ because the unit tests of internal/checkpointregistry and of
// the Sandbox reconciler serve it as well as the suites under test/.
package memregistry

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// Repository is the repository the agents keep Checkpoints in.
const Repository = "dockside/checkpoints"

// Server is an in-memory registry listening on Addr (127.0.0.1:port) until Close.
type Server struct {
	Addr string
	srv  *http.Server
}

// Handler is the registry's HTTP API, for a test that wraps it (to tamper with answers, or ask for a login)
// before it Serves it.
func Handler() http.Handler {
	return ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
}

// Start serves an empty in-memory registry on a free port of 127.0.0.1.
func Start() (*Server, error) { return Serve(Handler()) }

// Serve serves h, a registry's HTTP API, on a free port of 127.0.0.1.
func Serve(h http.Handler) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the registry: %w", err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	return &Server{Addr: l.Addr().String(), srv: srv}, nil
}

// Repo is the value of the agents' --checkpoint-registry: host:port/Repository.
func (s *Server) Repo() string { return s.Addr + "/" + Repository }

// URL is where the registry's HTTP API serves path of Repository: manifests/<reference> or blobs/<digest>.
func (s *Server) URL(path string) string {
	return "http://" + s.Addr + "/v2/" + Repository + "/" + path
}

// Close stops serving and drops everything the registry held.
func (s *Server) Close() error {
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("stopping the registry on %s: %w", s.Addr, err)
	}
	return nil
}
