package mcpserver

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRunPythonKeepsStateInOneSessionPerSandbox(t *testing.T) {
	h := newHarness(t, sandbox("py", testImage), sandbox("py2", testImage))
	fi := &fakeInterpreter{}
	h.dp.exec = fi.exec
	var out pythonOutput
	h.mustCall("run_python", map[string]any{"sandbox": "py", "code": "x = 42"}, &out)
	if !out.Restarted || out.Value != nil || out.Error != nil {
		t.Fatalf("first call %+v", out)
	}
	h.mustCall("run_python", map[string]any{"sandbox": "py", "code": "x"}, &out)
	if out.Restarted || out.Value == nil || *out.Value != "42" || out.Stdout != "read x\n" {
		t.Fatalf("second call %+v", out)
	}
	// The client hands notifications to its handler on a goroutine of their own, so one may land after the result.
	deadline := time.Now().Add(time.Minute)
	for len(h.progressOf("run_python")) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if p := h.progressOf("run_python"); len(p) != 1 || p[0].Message != "read x\n" {
		t.Fatalf("the stream message came as progress: %+v", p)
	}
	h.mustCall("run_python", map[string]any{"sandbox": "py2", "code": "x"}, &out)
	if !out.Restarted || out.Error == nil || out.Error.Name != "NameError" || out.Error.Traceback != "Traceback (most recent call last):\nNameError: name 'x' is not defined\n" {
		t.Fatalf("another Sandbox's interpreter is its own: %+v", out)
	}
	if fi.starts != 2 {
		t.Fatalf("%d interpreters started, want 2", fi.starts)
	}
	var del deleteOutput
	h.mustCall("delete_sandbox", map[string]any{"sandbox": "py2"}, &del)
	if _, ok := h.server.sessions.byKey[testNS+"/py2"]; ok {
		t.Fatal("delete_sandbox left the interpreter session of the Sandbox")
	}
}

func TestRunPythonCancelInterruptsAndKeepsTheSession(t *testing.T) {
	h := newHarness(t, sandbox("py", testImage))
	fi := &fakeInterpreter{}
	h.dp.exec = fi.exec
	h.mustCall("run_python", map[string]any{"sandbox": "py", "code": "x = 1"}, &pythonOutput{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(50 * time.Millisecond) // the request is written by then, or the interrupt waits in the pipe
		cancel()
	}()
	if _, err := h.session.CallTool(ctx, toolParams("run_python", map[string]any{"sandbox": "py", "code": "sleep"})); err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	// The next call waits for the interrupted one to finish, so it sees the interrupt recorded.
	var out pythonOutput
	h.mustCall("run_python", map[string]any{"sandbox": "py", "code": "x"}, &out)
	if out.Restarted || out.Value == nil || *out.Value != "1" {
		t.Fatalf("after the interrupt the session goes on with its variables: %+v", out)
	}
	if fi.interrupts != 1 {
		t.Fatalf("%d interrupts, want 1", fi.interrupts)
	}
}

func TestRunPythonReportsAnInterpreterThatEnded(t *testing.T) {
	h := newHarness(t, sandbox("py", testImage))
	h.dp.exec = func(ctx context.Context, _ []string, _ io.Reader, _, stderr io.Writer) (int, error) {
		_, _ = stderr.Write([]byte("/usr/bin/python3: No module named dockside_interpreter\n"))
		return 1, nil
	}
	msg := h.call(t.Context(), "run_python", map[string]any{"sandbox": "py", "code": "1"}, nil)
	if want := "InterpreterMissing: image dockside.dev/python:local of Sandbox py has no dockside_interpreter module (docs/design/interpreter.md)"; msg != want {
		t.Errorf("%q, want %q", msg, want)
	}
	h.dp.exec = func(ctx context.Context, _ []string, _ io.Reader, _, stderr io.Writer) (int, error) {
		_, _ = stderr.Write([]byte("Fatal Python error\n"))
		return 2, nil
	}
	msg = h.call(t.Context(), "run_python", map[string]any{"sandbox": "py", "code": "1"}, nil)
	for _, want := range []string{"the interpreter session ended", "(the next call starts a new one)", "the interpreter exited with code 2", "Fatal Python error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
