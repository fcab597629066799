package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type pythonInput struct {
	target
	Code string `json:"code" jsonschema:"Python code; the value of a last expression is returned"`
}

type pythonOutput struct {
	Stdout string       `json:"stdout" jsonschema:"what the code wrote; its head only when it was long, with a marker"`
	Stderr string       `json:"stderr" jsonschema:"the same for standard error"`
	Value  *string      `json:"value,omitempty" jsonschema:"the repr of the last expression's value, when the code ends with one that is not None"`
	Error  *pythonError `json:"error,omitempty" jsonschema:"the exception the code raised"`
	// Restarted says the interpreter was started for this call: nothing defined by an earlier call is there.
	Restarted bool `json:"restarted"`
}

type pythonError struct {
	Name      string `json:"name" jsonschema:"the exception's class"`
	Value     string `json:"value" jsonschema:"its message"`
	Traceback string `json:"traceback" jsonschema:"the traceback as Python prints it"`
}

func (s *Server) addPythonTool() {
	mcp.AddTool(s.Server, &mcp.Tool{
		Name: "run_python",
		Description: "Run Python code in the Sandbox's stateful interpreter (python image): variables, functions and " +
			"imports persist between calls until the Sandbox is deleted. Returns stdout, stderr, the value of the " +
			"last expression, and an exception with its traceback. Output streams as progress notifications; " +
			"cancelling the call interrupts the code (KeyboardInterrupt), keeping the variables.",
	}, s.runPython)
}

func (s *Server) runPython(ctx context.Context, req *mcp.CallToolRequest, in pythonInput) (*mcp.CallToolResult, pythonOutput, error) {
	sbx, err := s.sandbox(ctx, in.target)
	if err != nil {
		return nil, pythonOutput{}, err
	}
	it, fresh := s.sessions.get(sbx.Namespace, sbx.Name)
	p := startProgress(ctx, req)
	res, err := it.run(ctx, in.Code, s.opts.MaxOutputBytes, p)
	p.stop()
	if errors.Is(err, errInterpreterEnded) {
		<-it.ended
		if strings.Contains(it.err.Error(), "No module named dockside_interpreter") {
			return nil, pythonOutput{}, fmt.Errorf("InterpreterMissing: image %s of Sandbox %s has no dockside_interpreter module (docs/design/interpreter.md)", sbx.Spec.Image, sbx.Name)
		}
		return nil, pythonOutput{}, fmt.Errorf("running Python in Sandbox %s: %w (the next call starts a new one): %w", sbx.Name, err, it.err)
	}
	if err != nil {
		return nil, pythonOutput{}, fmt.Errorf("running Python in Sandbox %s: %w", sbx.Name, err)
	}
	out := pythonOutput{
		Stdout:    withMarker(res.Stdout, res.StdoutTruncatedBytes),
		Stderr:    withMarker(res.Stderr, res.StderrTruncatedBytes),
		Restarted: fresh,
	}
	if res.Value != nil {
		out.Value = &res.Value.Repr
	}
	if res.Error != nil {
		out.Error = &pythonError{Name: res.Error.Name, Value: res.Error.Value, Traceback: strings.Join(res.Error.Traceback, "")}
	}
	return nil, out, nil
}

// withMarker says, after output the interpreter cut, how much it left out.
func withMarker(output string, dropped int64) string {
	if dropped == 0 {
		return output
	}
	return fmt.Sprintf("%s\n[... %d more bytes left out ...]\n", output, dropped)
}
