// Package mcpserver is the MCP server of `kubectl dockside mcp` (docs/mcp.md): tools that create Sandboxes,
// run commands and Python in them, read and write their files, checkpoint and delete them, each call made
// through the API server with the user's own credentials and confined to one namespace and to the images an
// operator lists.
package mcpserver

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options are what the server works with and within.
type Options struct {
	// Client reads and writes Dockside's objects (Sandboxes, Checkpoints) through the API server.
	Client client.Client
	// DataPlane runs commands and moves files through the API server's subresources of a Sandbox.
	DataPlane DataPlane
	// Policy is what the server may touch.
	Policy Policy
	// MaxOutputBytes bounds what one stream of a command (stdout, stderr) returns, head and tail kept.
	MaxOutputBytes int
	// MaxFileBytes bounds a file read_file returns and write_file takes.
	MaxFileBytes int64
	// MaxListEntries bounds the entries list_files returns; the rest are counted.
	MaxListEntries int
	// Interpreter is the command of the stateful Python interpreter in a Sandbox (docs/design/interpreter.md).
	Interpreter []string
	// PollInterval is how often a tool that waits reads its object again.
	PollInterval time.Duration
	// Version is reported to the host as the server's.
	Version string
}

// Server is the MCP server with its interpreter sessions.
type Server struct {
	*mcp.Server
	opts     Options
	sessions *interpreters
}

// New makes the server and registers its tools.
func New(opts Options) *Server {
	if opts.PollInterval == 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	s := &Server{
		Server: mcp.NewServer(&mcp.Implementation{Name: "dockside", Version: opts.Version}, &mcp.ServerOptions{
			Instructions: instructions(opts.Policy),
		}),
		opts:     opts,
		sessions: newInterpreters(opts.DataPlane, opts.Interpreter),
	}
	s.addSandboxTools()
	s.addCommandTool()
	s.addPythonTool()
	s.addFileTools()
	return s
}

// Close ends every interpreter session the server holds.
func (s *Server) Close() { s.sessions.closeAll() }
