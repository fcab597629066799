package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dockside-dev/dockside/internal/mcpserver"
	"github.com/dockside-dev/dockside/internal/version"
)

const mcpUsage = `Usage: kubectl dockside mcp [flags] --image IMAGE [--image IMAGE...]

Serves Dockside to an MCP host (Claude and the others) over standard input and output: tools to create a
Sandbox from one of the listed images with limits, or from a listed template or warm pool, run a command (output streamed as progress notifications,
bounded), run Python in a stateful interpreter, read, write and list files, checkpoint and delete. Every call
goes through the API server with this kubeconfig's credentials, so RBAC and the audit log see the user; the
server is confined to one namespace (-n, else the context's) and to the images listed with --image (and the
templates and pools listed with --template and --pool, whose images must be listed too). Nothing but
the protocol is written to standard output. How to add it to a host's configuration: docs/mcp.md.
Exit codes: 0 the host closed the connection, 1 the server failed (the reason is printed), 2 usage.
`

// interpreterCommand starts the stateful Python interpreter of the python image (docs/design/interpreter.md).
var interpreterCommand = []string{"python3", "-m", "dockside_interpreter"}

func mcpVerb() verb {
	k := &kubeFlags{}
	var images, templates, pools listFlag
	var maxOutput, maxList int
	var maxFile int64
	var caps capFlags
	var secretFiles bool
	return verb{
		usage: mcpUsage, minArgs: 0, maxArgs: 0,
		flags: func(fs *flag.FlagSet) {
			k.add(fs)
			fs.Var(&images, "image", "an image reference Sandboxes may be created from and used with, exactly as in spec.image (repeatable)")
			fs.Var(&templates, "template", "a SandboxTemplate Sandboxes may be created from; its image must be an --image too (repeatable)")
			fs.Var(&pools, "pool", "a SandboxWarmPool Sandboxes may be claimed from; its template's image must be an --image too (repeatable)")
			fs.IntVar(&maxOutput, "max-output-bytes", 64<<10, "the most of each of a command's stdout and stderr returned (head and tail)")
			fs.Int64Var(&maxFile, "max-file-bytes", 1<<20, "the largest file read_file returns and write_file takes")
			fs.IntVar(&maxList, "max-list-entries", 1000, "the most entries list_files returns; the rest are counted")
			caps.add(fs)
			fs.BoolVar(&secretFiles, "allow-secret-files", false, "touch Sandboxes that mount secret files (a model could read them out)")
		},
		run: func(ctx context.Context, _ []string) error {
			if len(images) == 0 {
				return usageError("no --image given: list the images this server may run")
			}
			if maxOutput < 2 || maxOutput > 1<<20 || maxFile < 1 || maxList < 1 {
				return usageError("--max-output-bytes must be between 2 and 1048576, --max-file-bytes and --max-list-entries 1 or more")
			}
			limits, err := caps.parse()
			if err != nil {
				return usageError("%s", err)
			}
			cfg, ns, err := k.config()
			if err != nil {
				return err
			}
			c, _, err := k.client()
			if err != nil {
				return err
			}
			s := mcpserver.New(mcpserver.Options{
				Client:    c,
				DataPlane: apiDataPlane{cfg: cfg},
				Policy: mcpserver.Policy{Namespace: ns, Images: images, Templates: templates, Pools: pools,
					Caps: limits, SecretFiles: secretFiles},
				MaxOutputBytes: maxOutput,
				MaxFileBytes:   maxFile,
				MaxListEntries: maxList,
				Interpreter:    interpreterCommand,
				Version:        version.String(),
			})
			defer s.Close()
			if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
				return fmt.Errorf("serving MCP: %w", err)
			}
			return nil
		},
	}
}
