package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultCommandTimeout is how long run_command lets a command run when not told.
const defaultCommandTimeout = 5 * time.Minute

// exitTimedOut is the exit code run_command reports for a command it stopped at its timeout, as timeout(1).
const exitTimedOut = 124

type commandInput struct {
	target
	Command        string `json:"command" jsonschema:"a shell command line, run with sh -c in the Sandbox"`
	Stdin          string `json:"stdin,omitempty" jsonschema:"text given to the command's standard input"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"stop the command after this many seconds (default 300)"`
}

type commandOutput struct {
	ExitCode int    `json:"exit_code" jsonschema:"the command's exit code; 124 when it was stopped at its timeout"`
	Stdout   string `json:"stdout" jsonschema:"its standard output; the head and the tail when it was long, with a marker between"`
	Stderr   string `json:"stderr" jsonschema:"its standard error, bounded the same way"`
	TimedOut bool   `json:"timed_out,omitempty"`
}

func (s *Server) addCommandTool() {
	mcp.AddTool(s.Server, &mcp.Tool{
		Name: "run_command",
		Description: "Run a shell command in a Sandbox (sh -c) and return its exit code, stdout and stderr. " +
			"Output streams as progress notifications while it runs; long output keeps its head and tail. " +
			"Cancelling the call stops the command.",
	}, s.runCommand)
}

func (s *Server) runCommand(ctx context.Context, req *mcp.CallToolRequest, in commandInput) (*mcp.CallToolResult, commandOutput, error) {
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, commandOutput{}, err
	}
	timeout := defaultCommandTimeout
	if in.TimeoutSeconds > 0 {
		timeout = time.Duration(in.TimeoutSeconds) * time.Second
	}
	run, cancel := context.WithTimeoutCause(ctx, timeout, errCommandTimeout)
	defer cancel()
	stdout, stderr := newBounded(s.opts.MaxOutputBytes), newBounded(s.opts.MaxOutputBytes)
	p := startProgress(ctx, req)
	var stdin io.Reader
	if in.Stdin != "" {
		stdin = strings.NewReader(in.Stdin)
	}
	code, err := s.opts.DataPlane.Exec(run, sbx.Namespace, sbx.Name, []string{"sh", "-c", in.Command}, stdin,
		io.MultiWriter(stdout, p), io.MultiWriter(stderr, p))
	p.stop()
	out := commandOutput{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()}
	switch {
	case errors.Is(context.Cause(run), errCommandTimeout) && ctx.Err() == nil:
		out.ExitCode, out.TimedOut = exitTimedOut, true
		return nil, out, nil
	case err != nil:
		return nil, out, fmt.Errorf("running the command in Sandbox %s: %w", sbx.Name, err)
	}
	return nil, out, nil
}

var errCommandTimeout = errors.New("the command's timeout passed")
