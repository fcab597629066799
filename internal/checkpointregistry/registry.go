// Package checkpointregistry keeps Checkpoint archives in an OCI registry, so that a Checkpoint taken on one
// node restores on another and outlives the node that took it (docs/design/checkpoints.md).
//
// Each Checkpoint is one OCI artifact in the agent's repository: a manifest tagged with the Checkpoint's UID
// whose one layer is the archive (the tar, by its sha256 digest) and whose config is the empty descriptor.
// Two Checkpoints of the same bytes have a manifest each (the UID is in its annotations) and share the layer
// blob; deleting a Checkpoint deletes its manifest, and the blob too when no other Checkpoint's manifest
// names it.
package checkpointregistry

import (
	"fmt"
	"net"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Media types of the artifact.
const (
	ArtifactType   = "application/vnd.dockside.checkpoint.v1"
	LayerMediaType = "application/vnd.dockside.checkpoint.archive.v1.tar"
	emptyMediaType = "application/vnd.oci.empty.v1+json"
	// UIDAnnotation holds the Checkpoint's UID on its manifest.
	UIDAnnotation = "dev.dockside.checkpoint.uid"
)

// Registry is one repository of a registry that holds Checkpoint archives. Its methods are safe for
// concurrent use.
type Registry struct {
	repo      name.Repository
	auth      authn.Authenticator
	transport http.RoundTripper
	opts      []remote.Option
}

// Options say how to reach the registry.
type Options struct {
	// Auth answers the registry's challenges; nil: anonymous.
	Auth authn.Authenticator
	// PlainHTTP talks HTTP instead of HTTPS; only a registry on a loopback address (127.0.0.0/8) may be
	// reached so, since the archives and the credentials would otherwise cross a network in the clear.
	PlainHTTP bool
	// Transport is the HTTP transport; nil: the default one.
	Transport http.RoundTripper
}

// New names the repository, <host[:port]>/<path>, that keeps the archives.
func New(repository string, o Options) (*Registry, error) {
	var nameOpts []name.Option
	if o.PlainHTTP {
		nameOpts = append(nameOpts, name.Insecure)
	}
	repo, err := name.NewRepository(repository, append(nameOpts, name.StrictValidation)...)
	if err != nil {
		return nil, fmt.Errorf("checkpoint registry %q is not a repository like host:port/path: %w", repository, err)
	}
	if o.PlainHTTP && !loopback(repo.RegistryStr()) {
		return nil, fmt.Errorf("checkpoint registry %q: plain HTTP is only allowed to an address in 127.0.0.0/8, not %s", repository, repo.RegistryStr())
	}
	auth := o.Auth
	if auth == nil {
		auth = authn.Anonymous
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	opts := []remote.Option{remote.WithAuth(auth), remote.WithTransport(base)}
	return &Registry{repo: repo, auth: auth, transport: base, opts: opts}, nil
}

// String is the repository's name.
func (r *Registry) String() string { return r.repo.String() }

// loopback tells whether host (with its port, if any) is a literal address in 127.0.0.0/8.
func loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() != nil && ip.To4()[0] == 127
}
