package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dockside-dev/dockside/test/internal/agentproc"
)

// BenchmarkMCP times a tool call of `kubectl dockside mcp` (docs/mcp.md), `run_command` of `true`, from the
// go-sdk's own client over stdio, as an MCP host makes it, against `docker exec` of `true` in the same
// Sandbox's primary, alternating. The server is started once and connected once, as a host holds it; each
// call reads the Sandbox (the server's confinement) and runs an exec through the API server.
func BenchmarkMCP(b *testing.B) {
	e, ns := benchNamespace(b, "mcp")
	ctx := context.Background()
	sbx := session(ns, "box")
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	session, err := connectMCP(ctx, e.cp.KubectlPath, e.cp.Kubeconfig, "--namespace", ns, "--image", busybox)
	if err != nil {
		b.Fatal(err)
	}
	defer session.Close()
	call := func() error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"sandbox": sbx.Name, "command": "true"}})
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("run_command true: %v", res.Content)
		}
		return nil
	}
	viaMCP, viaDocker, err := alternate(execRounds,
		func() (time.Duration, error) { return timed(call) },
		func() (time.Duration, error) {
			return timed(func() error { _, err := docker("exec", sbx.Status.ContainerID, "true"); return err })
		})
	if err != nil {
		b.Fatal(err)
	}
	record(b, group{
		Key:      "mcp",
		Title:    "MCP tool call run_command of true, from the go-sdk's client over stdio to kubectl dockside mcp",
		Baseline: "docker exec of true in the Sandbox's primary container, from the CLI",
		Figures: []figure{
			{Name: fmt.Sprintf("round trip, p50 of %d", execRounds), Unit: "s", Dockside: seconds(percentile(viaMCP, 50)), Baseline: seconds(percentile(viaDocker, 50))},
			{Name: fmt.Sprintf("round trip, p95 of %d", execRounds), Unit: "s", Dockside: seconds(percentile(viaMCP, 95)), Baseline: seconds(percentile(viaDocker, 95))},
		},
	})
}

// connectMCP starts `kubectl dockside mcp ARGS...` as an MCP host does and connects the go-sdk's client to it.
func connectMCP(ctx context.Context, kubectl, kubeconfig string, args ...string) (*mcp.ClientSession, error) {
	bin, err := filepath.Abs(agentproc.BinDir())
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(kubectl, append([]string{"dockside", "mcp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stderr = os.Stderr
	return mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
}
