package main

import (
	"bytes"
	"context"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/dockside-dev/dockside/internal/mcpserver"
)

// apiDataPlane is the MCP server's way into Sandboxes: the exec and files subresources through the API
// server, with the kubeconfig's credentials, as exec, cp and ls use them.
type apiDataPlane struct{ cfg *rest.Config }

//nolint:wrapcheck // newExecutor's and the stream's errors say what failed in kubectl's words
func (d apiDataPlane) Exec(ctx context.Context, ns, sandbox string, command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	ex, err := newExecutor(d.cfg, ns, sandbox, command, stdin != nil, false, "")
	if err != nil {
		return 0, err
	}
	return exitCodeOf(ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr}))
}

func (d apiDataPlane) Stat(ctx context.Context, ns, sandbox, p string) (mcpserver.FileInfo, error) {
	c, err := newFilesClient(d.cfg, ns, sandbox)
	if err != nil {
		return mcpserver.FileInfo{}, err
	}
	info, err := c.stat(ctx, p)
	return fileInfo(info), err
}

func (d apiDataPlane) List(ctx context.Context, ns, sandbox, p string) ([]mcpserver.FileInfo, error) {
	c, err := newFilesClient(d.cfg, ns, sandbox)
	if err != nil {
		return nil, err
	}
	items, err := c.list(ctx, p)
	out := make([]mcpserver.FileInfo, len(items))
	for i, it := range items {
		out[i] = fileInfo(it)
	}
	return out, err
}

func (d apiDataPlane) Read(ctx context.Context, ns, sandbox, p string) (io.ReadCloser, error) {
	c, err := newFilesClient(d.cfg, ns, sandbox)
	if err != nil {
		return nil, err
	}
	return c.get(ctx, p, false)
}

func (d apiDataPlane) Write(ctx context.Context, ns, sandbox, p string, data []byte, mode string) error {
	c, err := newFilesClient(d.cfg, ns, sandbox)
	if err != nil {
		return err
	}
	return c.put(ctx, p, bytes.NewReader(data), int64(len(data)), mode, false)
}

func fileInfo(r remoteInfo) mcpserver.FileInfo {
	return mcpserver.FileInfo{Name: r.Name, Type: r.Type, Size: r.Size, Mode: r.Mode, Mtime: r.Mtime, Link: r.Link}
}
