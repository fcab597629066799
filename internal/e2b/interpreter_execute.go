package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// executeRequest is the body of POST /execute, as e2b_code_interpreter's run_code sends it.
type executeRequest struct {
	Code      *string           `json:"code"`
	ContextID *string           `json:"context_id"`
	Language  *string           `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// interpMessage is a message of dockside_interpreter (docs/design/interpreter.md, "The protocol, version 1").
type interpMessage struct {
	Type           string `json:"type"`
	ID             any    `json:"id"`
	Name           string `json:"name"`
	Text           string `json:"text"`
	ExecutionCount int    `json:"execution_count"`
	Message        string `json:"message"`
	Value          *struct {
		Data map[string]any `json:"data"`
	} `json:"value"`
	Error *struct {
		Name      string   `json:"name"`
		Value     string   `json:"value"`
		Traceback []string `json:"traceback"`
	} `json:"error"`
}

// resultFields are the fields of E2B's result for the MIME types of a value's bundle; other types go to
// extra, as E2B's interpreter sends them.
var resultFields = map[string]string{
	"text/plain": "text", "text/html": "html", "text/markdown": "markdown", "image/svg+xml": "svg",
	"image/png": "png", "image/jpeg": "jpeg", "application/pdf": "pdf", "text/latex": "latex",
	"application/json": "json", "application/javascript": "javascript",
}

// resultLine is E2B's result line of a value's MIME bundle: the main result of the execution.
func resultLine(data map[string]any) map[string]any {
	out := map[string]any{"type": "result", "is_main_result": true}
	extra := map[string]any{}
	for mime, v := range data {
		if f, ok := resultFields[mime]; ok {
			out[f] = v
		} else {
			extra[mime] = v
		}
	}
	// E2B's interpreter shows a string's text without the quotes of its repr.
	if t, ok := out["text"].(string); ok && len(t) >= 2 && strings.HasPrefix(t, "'") && strings.HasSuffix(t, "'") {
		out["text"] = t[1 : len(t)-1]
	}
	if len(extra) > 0 {
		out["extra"] = extra
	}
	return out
}

// errorLine is E2B's error line.
func errorLine(name, value, traceback string) map[string]any {
	return map[string]any{"type": "error", "name": name, "value": value, "traceback": traceback}
}

// pyJSON is a Python expression of v: its JSON, read by json.loads from a string literal (a JSON string is
// a Python string literal).
func pyJSON(v any) string {
	data, _ := json.Marshal(v)
	lit, _ := json.Marshal(string(data))
	return "__import__('json').loads(" + string(lit) + ")"
}

// envCode is the code that sets an execution's env_vars before it, and the code that undoes them after it,
// as E2B's interpreter does: a variable the Sandbox's commands get goes back to that value, any other goes.
// Both are single expressions whose value is None, so the session's names and _ stay as they were.
func envCode(sbx *dsv1alpha1.Sandbox, env map[string]string) (string, string) {
	base := map[string]string{}
	for _, e := range sbx.Spec.Env {
		base[e.Name] = e.Value
	}
	for _, e := range sbx.Spec.CommandEnv {
		base[e.Name] = e.Value
	}
	keep, drop := map[string]string{}, []string{}
	for k := range env {
		if v, ok := base[k]; ok {
			keep[k] = v
		} else {
			drop = append(drop, k)
		}
	}
	set := "__import__('os').environ.update(" + pyJSON(env) + ")"
	undo := "None if (__import__('os').environ.update(" + pyJSON(keep) + "), [__import__('os').environ.pop(k, None) for k in " + pyJSON(drop) + "]) else None"
	return set, undo
}

// execute serves POST /execute: the code runs in its context's interpreter, and what it writes, its value and
// its error come back as E2B's NDJSON lines, then end_of_execution.
func (g *Gateway) execute(w http.ResponseWriter, r *http.Request, call interpCall) {
	ctx := r.Context()
	var req executeRequest
	if err := readJSON(r, &req); err != nil {
		writeRefusal(w, err)
		return
	}
	contextID, language := "", ""
	if req.ContextID != nil {
		contextID = *req.ContextID
	}
	if req.Language != nil {
		language = *req.Language
	}
	switch {
	case req.Code == nil:
		writeRefusal(w, refusef(http.StatusBadRequest, "code is required"))
		return
	case contextID != "" && language != "":
		writeRefusal(w, refusef(http.StatusBadRequest, "Only one of context_id or language can be provided"))
		return
	}
	if err := python(language); err != nil {
		writeRefusal(w, err)
		return
	}
	if contextID == "" {
		contextID = defaultContext
	}
	name, valid := processOf(contextID)
	if !valid {
		writeRefusal(w, refusef(http.StatusNotFound, "Context %s not found", contextID))
		return
	}
	info, ok, err := running(ctx, call.p, name)
	switch {
	case err != nil:
		writeRefusal(w, err)
		return
	case !ok && contextID != defaultContext:
		writeRefusal(w, refusef(http.StatusNotFound, "Context %s not found", contextID))
		return
	case !ok:
		if err := startInterpreter(ctx, call.p, name, contextCommand("")); err != nil {
			writeRefusal(w, err)
			return
		}
		if info, err = call.p.process(ctx, name); err != nil {
			writeRefusal(w, err)
			return
		}
	}
	rid, err := newContextID()
	if err != nil {
		writeRefusal(w, err)
		return
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	send := func(id, code string, stream bool) {
		_ = enc.Encode(map[string]any{"type": "execute", "id": id, "code": code, "stream": stream})
	}
	set, undo := "", ""
	if len(req.EnvVars) > 0 {
		set, undo = envCode(call.sbx, req.EnvVars)
		send(rid+"-env", set, false)
	}
	send(rid, *req.Code, true)
	if undo != "" {
		send(rid+"-unenv", undo, false)
	}
	// Executions run one at a time in the order they come, so the three are sent at once.
	if err := call.p.stdin(ctx, name, in.Bytes(), false); err != nil {
		writeRefusal(w, err)
		return
	}

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	enc = json.NewEncoder(w)
	emit := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err //nolint:wrapcheck // the client went away
		}
		return rc.Flush() //nolint:wrapcheck // as above
	}
	err = relay(ctx, call.p, name, info.StdoutBytes, rid, emit)
	switch {
	case ctx.Err() != nil:
		// The client gave up (its timeout): the code is interrupted, as the Python client does, so that the
		// context is free for the next execution; its state is kept.
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = call.p.stdin(stop, name, []byte(`{"type":"interrupt"}`+"\n"), false)
		return
	case err != nil:
		_ = emit(errorLine("UnexpectedEndOfExecution", "the execution's output could not be read: "+err.Error(), ""))
	}
	_ = emit(map[string]string{"type": "end_of_execution"})
}

// errRelayed ends a follow once the execution's result was relayed.
var errRelayed = errors.New("relayed")

// relay follows the interpreter's stdout from byte from and sends what concerns execution rid as E2B's lines
// until its result. Messages of other executions (of other calls on the same context) are passed over; so is
// a line cut by the offset it starts at, which is not JSON.
func relay(ctx context.Context, p *sandboxPlane, name string, from int64, rid string, emit func(any) error) error {
	var partial []byte
	feed := func(b []byte) error {
		partial = append(partial, b...)
		for {
			i := bytes.IndexByte(partial, '\n')
			if i < 0 {
				return nil
			}
			line := partial[:i]
			partial = partial[i+1:]
			var m interpMessage
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			if id, _ := m.ID.(string); id != rid {
				continue
			}
			if done, err := translate(m, emit); err != nil || done {
				if err == nil {
					err = errRelayed
				}
				return err
			}
		}
	}
	for {
		before := from
		var err error
		from, err = p.follow(ctx, name, "stdout", from, feed)
		switch {
		case errors.Is(err, errRelayed):
			return nil
		case err != nil:
			return err
		}
		info, err := p.process(ctx, name)
		if err != nil {
			return err
		}
		if !info.Running && from == before {
			return emit(errorLine("UnexpectedEndOfExecution", "the context's interpreter ended before the execution did ("+endOf(info).GetStatus()+"): its state is gone, restart the context", ""))
		}
	}
}

// translate sends one message of the execution as E2B's lines; done is true at its end.
func translate(m interpMessage, emit func(any) error) (bool, error) {
	switch m.Type {
	case "stream":
		return false, emit(map[string]string{"type": m.Name, "text": m.Text, "timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
	case "result":
		if err := emit(map[string]any{"type": "number_of_executions", "execution_count": m.ExecutionCount}); err != nil {
			return true, err
		}
		if m.Value != nil {
			if err := emit(resultLine(m.Value.Data)); err != nil {
				return true, err
			}
		}
		if m.Error != nil {
			return true, emit(errorLine(m.Error.Name, m.Error.Value, strings.Join(m.Error.Traceback, "")))
		}
		return true, nil
	case "error":
		return true, emit(errorLine("InterpreterError", m.Message, ""))
	}
	return false, nil
}
