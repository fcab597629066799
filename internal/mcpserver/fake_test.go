package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

const (
	testNS    = "team"
	testImage = "dockside.dev/python:local"
)

// fakeDataPlane runs commands with exec, a function of the test's, and serves files from a map.
type fakeDataPlane struct {
	mu    sync.Mutex
	files map[string][]byte
	exec  func(ctx context.Context, command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

func (f *fakeDataPlane) Exec(ctx context.Context, _, _ string, command []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return f.exec(ctx, command, stdin, stdout, stderr)
}

func (f *fakeDataPlane) Stat(_ context.Context, _, _, p string) (FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.files[p]
	if !ok {
		return FileInfo{}, fmt.Errorf("%s does not exist", p)
	}
	return FileInfo{Name: p[strings.LastIndex(p, "/")+1:], Type: "file", Size: int64(len(data)), Mode: "0644"}, nil
}

func (f *fakeDataPlane) List(ctx context.Context, ns, sbx, dir string) ([]FileInfo, error) {
	f.mu.Lock()
	var names []string
	for p := range f.files {
		if strings.HasPrefix(p, dir+"/") {
			names = append(names, p)
		}
	}
	f.mu.Unlock()
	var out []FileInfo
	for _, p := range names {
		info, _ := f.Stat(ctx, ns, sbx, p)
		out = append(out, info)
	}
	return out, nil
}

func (f *fakeDataPlane) Read(_ context.Context, _, _, p string) (io.ReadCloser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return io.NopCloser(bytes.NewReader(f.files[p])), nil
}

func (f *fakeDataPlane) Write(_ context.Context, _, _, p string, data []byte, _ string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p] = data
	return nil
}

// harness is a server on a fake client and data plane, and an MCP client connected to it in memory.
type harness struct {
	t          *testing.T
	k8s        client.Client
	dp         *fakeDataPlane
	server     *Server
	session    *mcp.ClientSession
	progressMu sync.Mutex
	progress   []*mcp.ProgressNotificationParams
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := dsv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dp: &fakeDataPlane{files: map[string][]byte{}}}
	h.k8s = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&dsv1alpha1.Sandbox{}, &dsv1alpha1.Checkpoint{}, &dsv1alpha1.SandboxClaim{}).Build()
	h.server = New(Options{
		Client: h.k8s, DataPlane: h.dp,
		Policy: Policy{Namespace: testNS, Images: []string{testImage, "dockside.dev/busybox:local"},
			Templates: []string{"py", "redis"}, Pools: []string{"warm", "redis"},
			Caps: Caps{CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"), Workspace: resource.MustParse("1Gi"), Pids: 512}},
		MaxOutputBytes: 64, MaxFileBytes: 32, MaxListEntries: 3, Interpreter: []string{"python3", "-m", "dockside_interpreter"},
		PollInterval: 10 * time.Millisecond, Version: "test",
	})
	ctx := t.Context()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.progressMu.Lock()
			defer h.progressMu.Unlock()
			h.progress = append(h.progress, req.Params)
		},
	})
	var err error
	if h.session, err = c.Connect(ctx, ct, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.session.Close()
		h.server.Close()
	})
	return h
}

// call calls a tool and returns its structured output decoded into out, or the text of its error result.
func (h *harness) call(ctx context.Context, tool string, args map[string]any, out any) (errText string) {
	h.t.Helper()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken("token-" + tool)
	res, err := h.session.CallTool(ctx, params)
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		h.t.Fatal(err)
	}
	return ""
}

// mustCall calls a tool that must succeed.
func (h *harness) mustCall(tool string, args map[string]any, out any) {
	h.t.Helper()
	if msg := h.call(h.t.Context(), tool, args, out); msg != "" {
		h.t.Fatalf("%s failed: %s", tool, msg)
	}
}

// progressOf is what progress notifications came for a tool's token.
func (h *harness) progressOf(tool string) []*mcp.ProgressNotificationParams {
	h.progressMu.Lock()
	defer h.progressMu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, p := range h.progress {
		if p.ProgressToken == "token-"+tool {
			out = append(out, p)
		}
	}
	return out
}

func sandbox(name, image string) *dsv1alpha1.Sandbox {
	return &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name}, Spec: dsv1alpha1.SandboxSpec{Image: image}}
}

// fakeInterpreter speaks the interpreter's protocol (docs/design/interpreter.md) for code of two forms,
// "k = v" and "k", keeping its variables between requests; "sleep" runs until interrupted. It records the
// interrupts it gets and how many times it was started.
type fakeInterpreter struct {
	mu         sync.Mutex
	interrupts int
	starts     int
}

func (fi *fakeInterpreter) exec(ctx context.Context, _ []string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
	fi.mu.Lock()
	fi.starts++
	fi.mu.Unlock()
	vars := map[string]string{}
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- append([]byte{}, sc.Bytes()...)
		}
	}()
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(map[string]any{"type": "ready", "protocol": 1, "python": "3.11.2", "pid": 7}); err != nil {
		return 1, err
	}
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case l, ok := <-lines:
			if !ok {
				return 0, nil
			}
			line = l
		}
		var req pyExecute
		if err := json.Unmarshal(line, &req); err != nil {
			return 1, err
		}
		if req.Type != "execute" {
			continue // an interrupt with nothing running is ignored
		}
		res := pyMessage{Type: "result", ID: req.ID, Status: "ok"}
		switch k, v, set := strings.Cut(req.Code, " = "); {
		case req.Code == "sleep":
			if err := fi.waitInterrupt(ctx, lines); err != nil {
				return 0, err
			}
			res.Status, res.Error = "error", &pyError{Name: "KeyboardInterrupt", Traceback: []string{"Traceback (most recent call last):\n", "KeyboardInterrupt\n"}}
		case set:
			vars[k] = v
		default:
			value, ok := vars[req.Code]
			if !ok {
				res.Status, res.Error = "error", &pyError{Name: "NameError", Value: fmt.Sprintf("name '%s' is not defined", req.Code),
					Traceback: []string{"Traceback (most recent call last):\n", "NameError: name '" + req.Code + "' is not defined\n"}}
				break
			}
			res.Value = &pyValue{Repr: value}
			res.Stdout = "read " + req.Code + "\n"
			if err := enc.Encode(pyMessage{Type: "stream", ID: req.ID, Name: "stdout", Text: res.Stdout}); err != nil {
				return 1, err
			}
		}
		if err := enc.Encode(res); err != nil {
			return 1, err
		}
	}
}

// waitInterrupt waits for the interrupt message.
func (fi *fakeInterpreter) waitInterrupt(ctx context.Context, lines <-chan []byte) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case l := <-lines:
		var in pyInterrupt
		if err := json.Unmarshal(l, &in); err != nil || in.Type != "interrupt" {
			return errors.New("expected an interrupt of the running request")
		}
		fi.mu.Lock()
		fi.interrupts++
		fi.mu.Unlock()
		return nil
	}
}

func toolParams(tool string, args map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: tool, Arguments: args}
}
