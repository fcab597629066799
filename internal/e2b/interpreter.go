package e2b

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
)

// The code interpreter that e2b_code_interpreter reaches at port 49999 of a sandbox (docs/e2b.md, "The code
// interpreter"). A context is one dockside_interpreter process (docs/design/interpreter.md) that the gateway
// starts in the background through the processes subresource, named e2b-code-<context ID>: its variables
// live in that process, so any gateway, restarted or not, finds a context again by its name, and the gateway
// keeps nothing of its own.
const (
	interpreterPort = 49999
	contextPrefix   = "e2b-code-"
	// defaultContext is the context of an execution that names none (or names the language python); it is
	// started at its first execution.
	defaultContext = "default"
	// interpreterStart bounds the wait for a new interpreter's first line: an exec and a Python start.
	interpreterStart = 60 * time.Second
)

// interpreterCommand starts dockside_interpreter; the python image ships it.
var interpreterCommand = []string{"python3", "-m", "dockside_interpreter"}

// codeContext is E2B's Context.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

// interpCall is a request to a sandbox's interpreter: the Sandbox, and its data plane as the caller reaches it.
type interpCall struct {
	sbx *dsv1alpha1.Sandbox
	p   *sandboxPlane
}

// interpRefusal is a refusal of the interpreter itself, which E2B's interpreter answers as plain text.
type interpRefusal struct {
	code int
	msg  string
}

func (e *interpRefusal) Error() string { return e.msg }

func refusef(code int, format string, args ...any) *interpRefusal {
	return &interpRefusal{code: code, msg: fmt.Sprintf(format, args...)}
}

// writeRefusal answers err as the interpreter does: its code and plain text; a data plane refusal keeps the
// data plane's code and words.
func writeRefusal(w http.ResponseWriter, err error) {
	code, msg := http.StatusInternalServerError, err.Error()
	var ir *interpRefusal
	switch {
	case errors.As(err, &ir):
		code = ir.code
	case codeOf(err) != 0:
		code = codeOf(err)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg)
}

// interpreterMux serves the interpreter's routes.
func (g *Gateway) interpreterMux() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, "OK") })
	m.HandleFunc("POST /execute", g.interp(g.execute))
	m.HandleFunc("POST /contexts", g.interp(g.createContext))
	m.HandleFunc("GET /contexts", g.interp(g.listContexts))
	m.HandleFunc("DELETE /contexts/{context}", g.interp(g.removeContext))
	m.HandleFunc("POST /contexts/{context}/restart", g.interp(g.restartContext))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRefusal(w, refusef(http.StatusNotFound, "%s %s is not part of the code interpreter", r.Method, r.URL.Path))
	})
	return m
}

type interpSandboxKey struct{}

// serveInterpreter serves a request for port 49999 of sandbox id.
func (g *Gateway) serveInterpreter(w http.ResponseWriter, r *http.Request, id string) {
	g.interpreter.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), interpSandboxKey{}, id)))
}

// interp lets through the callers portCaller lets through, as for any port of the sandbox.
func (g *Gateway) interp(h func(http.ResponseWriter, *http.Request, interpCall)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, _ := r.Context().Value(interpSandboxKey{}).(string)
		c, sbx, ok := g.portCaller(w, r, id, interpreterPort)
		if !ok {
			return
		}
		p, err := newSandboxPlane(c, id)
		if err != nil {
			writeError(w, err)
			return
		}
		h(w, r, interpCall{sbx: sbx, p: p})
	}
}

// processOf is the process of context id; ok is false for an ID no process can be named after.
func processOf(id string) (string, bool) {
	name := contextPrefix + id
	return name, id != "" && len(validation.IsDNS1123Label(name)) == 0
}

// python reads E2B's language: Python (any case, or none) is the only one served.
func python(language string) error {
	switch strings.ToLower(strings.TrimSpace(language)) {
	case "", "python":
		return nil
	}
	return refusef(http.StatusBadRequest, "language %q is not supported: Dockside's code interpreter runs Python only (docs/e2b.md, \"The code interpreter\")", language)
}

// contextCommand is the command line of a context's interpreter, in cwd when one is given.
func contextCommand(cwd string) []string {
	if cwd == "" {
		return interpreterCommand
	}
	return append([]string{"/bin/sh", "-c", cdScript, cwd}, interpreterCommand...)
}

// cwdOf reads a context's directory back from its command line: the Sandbox's working directory unless one
// was given.
func cwdOf(sbx *dsv1alpha1.Sandbox, command []string) string {
	if len(command) >= 4 && command[0] == "/bin/sh" && command[2] == cdScript {
		return command[3]
	}
	return filesclient.WorkingDir(sbx)
}

// newContextID is a context's ID: a random UUID, as E2B's are.
func newContextID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a context ID: %w", err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]), nil
}

// startInterpreter starts the interpreter of a context as process name, running command, and waits for its
// first line. A process of that name that runs already is taken as it is (another call started it).
func startInterpreter(ctx context.Context, p *sandboxPlane, name string, command []string) error {
	err := p.startProcess(ctx, name, command, true, "", nil)
	switch {
	case codeOf(err) == http.StatusConflict:
		return nil
	case err != nil:
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, interpreterStart)
	defer cancel()
	var first []byte
	errReady := errors.New("ready")
	for from := int64(0); ; {
		before := from
		from, err = p.follow(ctx, name, "stdout", from, func(b []byte) error {
			first = append(first, b...)
			if bytes.IndexByte(first, '\n') >= 0 {
				return errReady
			}
			return nil
		})
		if errors.Is(err, errReady) {
			break
		}
		if err != nil {
			return refusef(http.StatusInternalServerError, "starting the context's interpreter: %v", err)
		}
		info, err := p.process(ctx, name)
		if err != nil {
			return err
		}
		if !info.Running && from == before {
			return refusef(http.StatusInternalServerError, "the context's interpreter (%s) ended before its first line: %s", strings.Join(command, " "), endedHow(ctx, p, name, info))
		}
	}
	var ready struct {
		Type     string `json:"type"`
		Protocol int    `json:"protocol"`
	}
	line, _, _ := bytes.Cut(first, []byte("\n"))
	if json.Unmarshal(line, &ready) != nil || ready.Type != "ready" || ready.Protocol != 1 {
		_ = p.signal(context.WithoutCancel(ctx), name, "KILL")
		return refusef(http.StatusInternalServerError, "the context's interpreter does not speak dockside_interpreter's protocol 1 (docs/design/interpreter.md): its first line is %q", line)
	}
	return nil
}

// endedHow says how an interpreter that ended did: its standard error (an image without dockside_interpreter
// says No module named dockside_interpreter there), else its exit.
func endedHow(ctx context.Context, p *sandboxPlane, name string, info processInfo) string {
	if resp, err := p.do(ctx, http.MethodGet, "processes", nil, nil, name, "stderr"); err == nil {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		if msg := strings.TrimSpace(string(data)); msg != "" {
			return msg + " (the image needs python3 and dockside_interpreter: the python image has them)"
		}
	}
	return endOf(info).GetStatus()
}

// running is the process of a context when it runs, ok false when it does not (never started, ended or
// forgotten).
func running(ctx context.Context, p *sandboxPlane, name string) (processInfo, bool, error) {
	info, err := p.process(ctx, name)
	switch {
	case codeOf(err) == http.StatusNotFound:
		return info, false, nil
	case err != nil:
		return info, false, err
	}
	return info, info.Running, nil
}

// readJSON decodes a request's JSON body; an empty body is an empty object.
func readJSON(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return refusef(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return refusef(http.StatusBadRequest, "the body is not the JSON expected: %v", err)
	}
	return nil
}

// createContext serves POST /contexts: a new interpreter, in cwd when one is given.
func (g *Gateway) createContext(w http.ResponseWriter, r *http.Request, call interpCall) {
	var req struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	if err := readJSON(r, &req); err != nil {
		writeRefusal(w, err)
		return
	}
	if err := python(req.Language); err != nil {
		writeRefusal(w, err)
		return
	}
	id, err := newContextID()
	if err != nil {
		writeRefusal(w, err)
		return
	}
	name, _ := processOf(id)
	command := contextCommand(req.Cwd)
	if err := startInterpreter(r.Context(), call.p, name, command); err != nil {
		writeRefusal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, codeContext{ID: id, Language: "python", Cwd: cwdOf(call.sbx, command)})
}

// listContexts serves GET /contexts: the default context, and every other whose interpreter runs.
func (g *Gateway) listContexts(w http.ResponseWriter, r *http.Request, call interpCall) {
	items, err := call.p.processes(r.Context())
	if err != nil {
		writeRefusal(w, err)
		return
	}
	out := []codeContext{{ID: defaultContext, Language: "python", Cwd: filesclient.WorkingDir(call.sbx)}}
	for _, it := range items {
		id, ok := strings.CutPrefix(it.ID, contextPrefix)
		if ok && it.Running && id != defaultContext {
			out = append(out, codeContext{ID: id, Language: "python", Cwd: cwdOf(call.sbx, it.Command)})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// removeContext serves DELETE /contexts/{id}: its interpreter is killed, with everything it started, and
// has ended when the answer comes.
func (g *Gateway) removeContext(w http.ResponseWriter, r *http.Request, call interpCall) {
	id := r.PathValue("context")
	name, valid := processOf(id)
	if !valid {
		writeRefusal(w, refusef(http.StatusNotFound, "Context %s not found", id))
		return
	}
	info, ok, err := running(r.Context(), call.p, name)
	switch {
	case err != nil:
		writeRefusal(w, err)
		return
	case !ok:
		writeRefusal(w, refusef(http.StatusNotFound, "Context %s not found", id))
		return
	}
	if err := stopInterpreter(r.Context(), call.p, name, info); err != nil {
		writeRefusal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

// restartContext serves POST /contexts/{id}/restart: a new interpreter in the same directory, its state gone.
func (g *Gateway) restartContext(w http.ResponseWriter, r *http.Request, call interpCall) {
	ctx := r.Context()
	id := r.PathValue("context")
	name, valid := processOf(id)
	if !valid {
		writeRefusal(w, refusef(http.StatusNotFound, "Context %s not found", id))
		return
	}
	info, err := call.p.process(ctx, name)
	switch {
	case codeOf(err) == http.StatusNotFound && id == defaultContext:
		info.Command = contextCommand("")
	case codeOf(err) == http.StatusNotFound:
		writeRefusal(w, refusef(http.StatusNotFound, "Context %s not found", id))
		return
	case err != nil:
		writeRefusal(w, err)
		return
	}
	if err := stopInterpreter(ctx, call.p, name, info); err != nil {
		writeRefusal(w, err)
		return
	}
	if err := startInterpreter(ctx, call.p, name, info.Command); err != nil {
		writeRefusal(w, err)
		return
	}
	writeJSON(w, http.StatusOK, nil)
}

// stopInterpreter kills a running interpreter and waits for its end, so that its name is free again.
func stopInterpreter(ctx context.Context, p *sandboxPlane, name string, info processInfo) error {
	if !info.Running {
		return nil
	}
	if err := p.signal(ctx, name, "KILL"); err != nil && codeOf(err) != http.StatusConflict {
		return err
	}
	for {
		_, ok, err := running(ctx, p, name)
		if err != nil || !ok {
			return err
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
