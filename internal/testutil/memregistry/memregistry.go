// Package memregistry serves go-containerregistry's in-memory OCI registry on 127.0.0.1, the registry the
// end-to-end spec and the benchmark of Checkpoints in a registry give their agents (docs/design/checkpoints.md,
// "Checkpoints in a registry"): plain HTTP on loopback, which the agents' --checkpoint-registry-plain-http
// allows, and nothing kept after the test.
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

// Start serves an empty in-memory registry on a free port of 127.0.0.1.
func Start() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the test registry: %w", err)
	}
	srv := &http.Server{Handler: ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))}
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
		return fmt.Errorf("closing the test registry: %w", err)
	}
	return nil
}
