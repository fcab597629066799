package mcpserver

import (
	"context"
	"io"
	"time"
)

// DataPlane reaches into a Sandbox through the API server's subresources (subresources.dockside.dev:
// docs/design/dataplane.md, docs/design/dataplane-files.md). kubectl-dockside implements it with the
// user's kubeconfig; the unit tests with a fake.
type DataPlane interface {
	// Exec runs command in the Sandbox's primary container as the exec subresource does, streaming its output
	// into stdout and stderr, with stdin (nil for none) as its standard input, and returns its exit code.
	// Ending ctx ends the command.
	Exec(ctx context.Context, ns, sandbox string, command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// Stat reports what is at path.
	Stat(ctx context.Context, ns, sandbox, path string) (FileInfo, error)
	// List reports the entries of the directory path.
	List(ctx context.Context, ns, sandbox, path string) ([]FileInfo, error)
	// Read streams the file path; the caller closes it.
	Read(ctx context.Context, ns, sandbox, path string) (io.ReadCloser, error)
	// Write replaces the file path with data, atomically; mode is octal permission bits, or "" for the default.
	Write(ctx context.Context, ns, sandbox, path string, data []byte, mode string) error
}

// FileInfo is what the files subresource reports of a path.
type FileInfo struct {
	Name  string    `json:"name"`
	Type  string    `json:"type" jsonschema:"file, dir, symlink or other"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode" jsonschema:"permission bits in octal"`
	Mtime time.Time `json:"mtime"`
	Link  string    `json:"link,omitempty" jsonschema:"a symlink's target"`
}
