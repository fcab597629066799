package e2b

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// localProc is a process of localProcesses: a real one on this machine.
type localProc struct {
	info           processInfo
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr []byte
}

// localProcesses is an API server whose processes subresource of sandbox sbx runs its processes on this
// machine as the data plane runs them in a Sandbox (docs/design/dataplane.md, "Signals and background
// processes"), so that the gateway drives the real dockside_interpreter (hack/images/python) with python3.
type localProcesses struct {
	mu      sync.Mutex
	procs   map[string]*localProc
	changed chan struct{}
}

// interpSandbox is the Sandbox the gateway reads: its commands get A=1.
var interpSandbox = `{"apiVersion":"dockside.dev/v1alpha1","kind":"Sandbox","metadata":{"namespace":"ns-a","name":"sbx"},` +
	`"spec":{"image":"i","workingDir":"/home/user","commandEnv":[{"name":"A","value":"1"}]}}`

func newLocalProcesses(t *testing.T) *httptest.Server {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed to run dockside_interpreter")
	}
	f := &localProcesses{procs: map[string]*localProc{}, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.procs {
			_ = p.stdin.Close()
		}
	})
	return srv
}

func (f *localProcesses) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// writer appends a stream's bytes to the process, counted.
type writer struct {
	f      *localProcesses
	p      *localProc
	stderr bool
}

func (w writer) Write(b []byte) (int, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.stderr {
		w.p.stderr = append(w.p.stderr, b...)
		w.p.info.StderrBytes = int64(len(w.p.stderr))
	} else {
		w.p.stdout = append(w.p.stdout, b...)
		w.p.info.StdoutBytes = int64(len(w.p.stdout))
	}
	w.f.wake()
	return len(b), nil
}

func (f *localProcesses) start(id string, command []string) (*localProc, error) {
	p := &localProc{info: processInfo{ID: id, Command: command, Background: true, Running: true}}
	cmd := exec.Command(command[0], command[1:]...) //nolint:gosec // the test's own commands
	src, _ := filepath.Abs(filepath.Join("..", "..", "hack", "images", "python"))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+src)
	cmd.Stdout, cmd.Stderr = writer{f, p, false}, writer{f, p, true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p.stdin = in
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		err := cmd.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		code := cmd.ProcessState.ExitCode()
		p.info.Running, p.info.ExitCode = false, &code
		if err != nil && code < 0 {
			p.info.ExitCode, p.info.Error = nil, err.Error()
		}
		f.wake()
	}()
	p.cmd = cmd
	return p, nil
}

func (f *localProcesses) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer key-a" {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"kind":"Status","code":401,"message":"Unauthorized"}`)
		return
	}
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		_, _ = io.WriteString(w, `{"status":{"userInfo":{"username":"system:serviceaccount:ns-a:agent"}}}`)
		return
	case sandboxes + "sbx":
		_, _ = io.WriteString(w, interpSandbox)
		return
	case "/api": // discovery, for the Sandboxes' REST mapping
		_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		return
	case "/apis":
		_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"dockside.dev","versions":[{"groupVersion":"dockside.dev/v1alpha1","version":"v1alpha1"}],"preferredVersion":{"groupVersion":"dockside.dev/v1alpha1","version":"v1alpha1"}}]}`)
		return
	case "/apis/dockside.dev/v1alpha1":
		_, _ = io.WriteString(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"dockside.dev/v1alpha1","resources":[{"name":"sandboxes","singularName":"sandbox","namespaced":true,"kind":"Sandbox","verbs":["get","list"]}]}`)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, fakeProcsPath)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","code":404,"message":"not here"}`)
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	if parts[0] == "" {
		if r.Method == http.MethodPost {
			if old := f.procs[q.Get("id")]; old != nil && old.info.Running {
				w.WriteHeader(http.StatusConflict)
				_, _ = io.WriteString(w, `{"kind":"Status","code":409,"message":"a running process holds the name"}`)
				return
			}
			p, err := f.start(q.Get("id"), q["command"])
			if err != nil {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = fmt.Fprintf(w, `{"kind":"Status","code":500,"message":%q}`, err.Error())
				return
			}
			f.procs[p.info.ID] = p
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(p.info)
			return
		}
		var list struct {
			Items []processInfo `json:"items"`
		}
		for _, p := range f.procs {
			list.Items = append(list.Items, p.info)
		}
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	p := f.procs[parts[0]]
	if p == nil {
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","code":404,"message":"Sandbox \"sbx\" has no process %q"}`, parts[0])
		return
	}
	switch what := strings.Join(parts[1:], "/"); what {
	case "":
		_ = json.NewEncoder(w).Encode(p.info)
	case "stdin":
		data, _ := io.ReadAll(r.Body)
		_, _ = p.stdin.Write(data)
		_, _ = io.WriteString(w, `{}`)
	case "signal":
		if !p.info.Running {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"kind":"Status","code":409,"message":"has ended"}`)
			return
		}
		_ = p.cmd.Process.Kill()
		_, _ = io.WriteString(w, `{}`)
	case "stdout", "stderr":
		from, _ := strconv.Atoi(q.Get("from"))
		data := func() []byte {
			if what == "stdout" {
				return p.stdout
			}
			return p.stderr
		}
		from = min(from, len(data()))
		if q.Get("follow") == "true" && from == len(data()) && p.info.Running {
			changed := f.changed
			f.mu.Unlock()
			select {
			case <-changed:
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
			f.mu.Lock()
		}
		w.Header().Set("X-Dockside-Output-Start", strconv.Itoa(from))
		_, _ = w.Write(data()[from:])
	default:
		http.NotFound(w, r)
	}
}

// interpGateway is a gateway on localProcesses, reached by E2B's one-URL headers for port 49999 of sbx.
func interpGateway(t *testing.T) string {
	t.Helper()
	api := newLocalProcesses(t)
	srv := httptest.NewServer(newTestGateway(t, api.URL))
	t.Cleanup(srv.Close)
	return srv.URL
}

// interpCall sends a request to the interpreter of sbx as e2b_code_interpreter does, and returns the code and
// the body.
func callInterpreter(t *testing.T, gw, method, path string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, gw+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("E2b-Sandbox-Id", "sbx")
	req.Header.Set("E2b-Sandbox-Port", "49999")
	req.Header.Set("X-Access-Token", "key-a")
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// runCode runs code through /execute and returns its NDJSON lines, decoded.
func runCode(t *testing.T, gw string, body map[string]any) []map[string]any {
	t.Helper()
	code, out := callInterpreter(t, gw, http.MethodPost, "/execute", body)
	if code != http.StatusOK {
		t.Fatalf("execute answered %d: %s", code, out)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		lines = append(lines, m)
	}
	return lines
}

// ofType are the lines of one type.
func ofType(lines []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}

func TestRunCodeKeepsStateInItsContext(t *testing.T) {
	g := NewWithT(t)
	gw := interpGateway(t)

	lines := runCode(t, gw, map[string]any{"code": "x = 1", "context_id": nil, "language": nil, "env_vars": nil})
	g.Expect(lines).To(HaveLen(2), "%v", lines)
	g.Expect(lines[0]).To(Equal(map[string]any{"type": "number_of_executions", "execution_count": 1.0}))
	g.Expect(lines[1]).To(Equal(map[string]any{"type": "end_of_execution"}))

	lines = runCode(t, gw, map[string]any{"code": "print(x + 1)\nx * 3"})
	g.Expect(ofType(lines, "stdout")).To(ConsistOf(And(HaveKeyWithValue("text", "2\n"), HaveKey("timestamp"))))
	g.Expect(ofType(lines, "result")).To(Equal([]map[string]any{{"type": "result", "text": "3", "is_main_result": true}}))
	g.Expect(lines[len(lines)-1]).To(HaveKeyWithValue("type", "end_of_execution"))

	lines = runCode(t, gw, map[string]any{"code": "'a string'", "language": "Python"})
	g.Expect(ofType(lines, "result")[0]).To(HaveKeyWithValue("text", "a string"), "E2B shows a string without its quotes")

	lines = runCode(t, gw, map[string]any{"code": "import sys\nprint('oops', file=sys.stderr)\n1/0"})
	g.Expect(ofType(lines, "stderr")).To(ConsistOf(HaveKeyWithValue("text", "oops\n")))
	errs := ofType(lines, "error")
	g.Expect(errs).To(HaveLen(1))
	g.Expect(errs[0]).To(HaveKeyWithValue("name", "ZeroDivisionError"))
	g.Expect(errs[0]).To(HaveKeyWithValue("value", "division by zero"))
	g.Expect(errs[0]["traceback"]).To(And(ContainSubstring("Traceback (most recent call last)"), HaveSuffix("ZeroDivisionError: division by zero\n")))
	g.Expect(ofType(lines, "result")).To(BeEmpty())

	// A context of its own: x is not there, its directory is the one asked for.
	dir := t.TempDir()
	code, out := callInterpreter(t, gw, http.MethodPost, "/contexts", map[string]any{"language": "python", "cwd": dir})
	g.Expect(code).To(Equal(http.StatusOK), out)
	var made codeContext
	g.Expect(json.Unmarshal([]byte(out), &made)).To(Succeed())
	g.Expect(made.ID).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`))
	g.Expect(made).To(Equal(codeContext{ID: made.ID, Language: "python", Cwd: dir}))
	lines = runCode(t, gw, map[string]any{"code": "import os\nprint(os.getcwd())\nx", "context_id": made.ID})
	g.Expect(ofType(lines, "stdout")).To(ConsistOf(HaveKeyWithValue("text", dir+"\n")))
	g.Expect(ofType(lines, "error")).To(ConsistOf(HaveKeyWithValue("name", "NameError")))

	code, out = callInterpreter(t, gw, http.MethodGet, "/contexts", nil)
	g.Expect(code).To(Equal(http.StatusOK), out)
	var listed []codeContext
	g.Expect(json.Unmarshal([]byte(out), &listed)).To(Succeed())
	g.Expect(listed).To(ConsistOf(codeContext{ID: "default", Language: "python", Cwd: "/home/user"}, made))

	// A restart forgets the context's state, and keeps its directory.
	runCode(t, gw, map[string]any{"code": "y = 5", "context_id": made.ID})
	code, out = callInterpreter(t, gw, http.MethodPost, "/contexts/"+made.ID+"/restart", nil)
	g.Expect(code).To(Equal(http.StatusOK), out)
	lines = runCode(t, gw, map[string]any{"code": "import os\nprint(os.getcwd())\ny", "context_id": made.ID})
	g.Expect(ofType(lines, "stdout")).To(ConsistOf(HaveKeyWithValue("text", dir+"\n")))
	g.Expect(ofType(lines, "error")).To(ConsistOf(HaveKeyWithValue("name", "NameError")))
	g.Expect(ofType(lines, "number_of_executions")).To(ConsistOf(HaveKeyWithValue("execution_count", 1.0)))

	code, out = callInterpreter(t, gw, http.MethodDelete, "/contexts/"+made.ID, nil)
	g.Expect(code).To(Equal(http.StatusOK), out)
	code, out = callInterpreter(t, gw, http.MethodPost, "/execute", map[string]any{"code": "1", "context_id": made.ID})
	g.Expect(code).To(Equal(http.StatusNotFound))
	g.Expect(out).To(Equal("Context " + made.ID + " not found"))

	// The default context kept x all along.
	lines = runCode(t, gw, map[string]any{"code": "x"})
	g.Expect(ofType(lines, "result")).To(ConsistOf(HaveKeyWithValue("text", "1")))
}

func TestEnvVarsLastOneExecution(t *testing.T) {
	g := NewWithT(t)
	gw := interpGateway(t)
	env := map[string]any{"NEW": "it's \"new\"\n", "A": "2"}
	lines := runCode(t, gw, map[string]any{"code": "import os\nos.environ['NEW'] + os.environ['A']", "env_vars": env})
	g.Expect(ofType(lines, "result")).To(ConsistOf(HaveKeyWithValue("text", `it\'s "new"\n2`)))
	// After it, A is the Sandbox's again and NEW is gone; _ is the last value the code made.
	lines = runCode(t, gw, map[string]any{"code": "(os.environ.get('NEW'), os.environ.get('A'), _[-1])"})
	g.Expect(ofType(lines, "result")).To(ConsistOf(HaveKeyWithValue("text", `(None, '1', '2')`)))
}

func TestInterpreterRefusals(t *testing.T) {
	g := NewWithT(t)
	gw := interpGateway(t)
	for _, c := range []struct {
		method, path string
		body         any
		code         int
		says         string
	}{
		{http.MethodPost, "/execute", map[string]any{"code": "1", "language": "javascript"}, http.StatusBadRequest, `language "javascript" is not supported`},
		{http.MethodPost, "/execute", map[string]any{"code": "1", "language": "python", "context_id": "default"}, http.StatusBadRequest, "Only one of context_id or language"},
		{http.MethodPost, "/execute", map[string]any{"context_id": "default"}, http.StatusBadRequest, "code is required"},
		{http.MethodPost, "/execute", map[string]any{"code": "1", "context_id": "nope"}, http.StatusNotFound, "Context nope not found"},
		{http.MethodPost, "/execute", map[string]any{"code": "1", "context_id": "Not A Name!"}, http.StatusNotFound, "not found"},
		{http.MethodPost, "/execute", "not an object", http.StatusBadRequest, "not the JSON expected"},
		{http.MethodPost, "/contexts", map[string]any{"language": "r"}, http.StatusBadRequest, `language "r" is not supported`},
		{http.MethodPost, "/contexts", map[string]any{"cwd": "/no/such/dir"}, http.StatusInternalServerError, "ended before its first line"},
		{http.MethodDelete, "/contexts/nope", nil, http.StatusNotFound, "Context nope not found"},
		{http.MethodPost, "/contexts/nope/restart", nil, http.StatusNotFound, "Context nope not found"},
		{http.MethodGet, "/elsewhere", nil, http.StatusNotFound, "not part of the code interpreter"},
	} {
		code, out := callInterpreter(t, gw, c.method, c.path, c.body)
		g.Expect(code).To(Equal(c.code), "%s %s %v: %s", c.method, c.path, c.body, out)
		g.Expect(out).To(ContainSubstring(c.says))
	}

	code, out := callInterpreter(t, gw, http.MethodGet, "/health", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(out).To(MatchJSON(`"OK"`))

	// The port's own refusals, in E2B's proxy's shapes.
	req, _ := http.NewRequest(http.MethodPost, gw+"/execute", strings.NewReader(`{"code":"1"}`))
	req.Header.Set("E2b-Sandbox-Id", "sbx")
	req.Header.Set("E2b-Sandbox-Port", "49999")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	g.Expect(string(body)).To(ContainSubstring(`"code":401`))
	req, _ = http.NewRequest(http.MethodPost, gw+"/execute", strings.NewReader(`{"code":"1"}`))
	req.Header.Set("E2b-Sandbox-Id", "gone")
	req.Header.Set("E2b-Sandbox-Port", "49999")
	req.Header.Set("X-Access-Token", "key-a")
	resp, err = http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadGateway))
	g.Expect(string(body)).To(ContainSubstring("The sandbox was not found"))
}

func TestInterpretersHostIsItsPort(t *testing.T) {
	g := NewWithT(t)
	api := newLocalProcesses(t)
	gw := newTestGateway(t, api.URL)
	gw.domain = testDomain
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	code, body := get(t, srv.URL, "49999-sbx."+testDomain, "/contexts", map[string]string{"X-Access-Token": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK), body)
	g.Expect(body).To(MatchJSON(`[{"id":"default","language":"python","cwd":"/home/user"}]`))
}

func TestResultLinesNameE2BsFormats(t *testing.T) {
	g := NewWithT(t)
	g.Expect(resultLine(map[string]any{
		"text/plain": "<Fig>", "text/html": "<b>x</b>", "image/png": "iVBOR", "application/json": map[string]any{"a": 1.0},
		"application/vnd.custom": "c",
	})).To(Equal(map[string]any{
		"type": "result", "is_main_result": true, "text": "<Fig>", "html": "<b>x</b>", "png": "iVBOR",
		"json": map[string]any{"a": 1.0}, "extra": map[string]any{"application/vnd.custom": "c"},
	}))
}

func TestAnInterpreterThatEndsAndACallerThatLeaves(t *testing.T) {
	g := NewWithT(t)
	gw := interpGateway(t)
	runCode(t, gw, map[string]any{"code": "x = 1"})
	lines := runCode(t, gw, map[string]any{"code": "import os\nos._exit(3)"})
	g.Expect(ofType(lines, "error")).To(ConsistOf(And(HaveKeyWithValue("name", "UnexpectedEndOfExecution"), HaveKeyWithValue("value", ContainSubstring("exit status 3")))))
	g.Expect(lines[len(lines)-1]).To(HaveKeyWithValue("type", "end_of_execution"))
	// The default context starts again, its state gone.
	lines = runCode(t, gw, map[string]any{"code": "x"})
	g.Expect(ofType(lines, "error")).To(ConsistOf(HaveKeyWithValue("name", "NameError")))

	// A caller that gives up has its code interrupted: the context is free again, its state kept.
	runCode(t, gw, map[string]any{"code": "y = 2"})
	req, _ := http.NewRequest(http.MethodPost, gw+"/execute", strings.NewReader(`{"code":"import time\ntime.sleep(60)"}`))
	req.Header.Set("E2b-Sandbox-Id", "sbx")
	req.Header.Set("E2b-Sandbox-Port", "49999")
	req.Header.Set("X-Access-Token", "key-a")
	resp, err := (&http.Client{Timeout: time.Second}).Do(req)
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	g.Expect(err).To(HaveOccurred(), "the sleep outlasts the caller's timeout")
	start := time.Now()
	lines = runCode(t, gw, map[string]any{"code": "y"})
	g.Expect(ofType(lines, "result")).To(ConsistOf(HaveKeyWithValue("text", "2")))
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
}
