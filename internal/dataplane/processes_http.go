package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/processes"
	"github.com/dockside-dev/dockside/internal/topology"
)

// followFor bounds one following read of a process's output: kube-apiserver cuts a request to a subresource
// that is not long-running (processes is not) at its --request-timeout, 60 s by default, so the answer ends
// first and the client asks again from where it got to.
const followFor = 45 * time.Second

// signals a caller may name, with or without SIG, or by number.
var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "TERM": syscall.SIGTERM, "CONT": syscall.SIGCONT,
	"STOP": syscall.SIGSTOP,
}

// serveProcesses serves sandboxes/<name>/processes of a Sandbox of this node (docs/design/dataplane.md,
// "Signals and background processes"):
//
//	POST processes?command=...[&id=ID][&stdin=true][&tty=true&cols=C&rows=R][&tag=T]  start a background
//	                                                 process (201, Process)
//	GET  processes                                   list (ProcessList)
//	GET  processes/ID                                one (Process)
//	GET  processes/ID/stdout|stderr[?from=N][&follow=true]  its output kept from byte N
//	POST processes/ID/stdin[?close=true]             write the body to its input
//	POST processes/ID/signal?signal=TERM             signal its process group
//	POST processes/ID/resize?cols=C&rows=R           resize its terminal
func (s *Server) serveProcesses(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox, rest string, woken bool) {
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if parts[0] == "" {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, processes.List{Items: s.processes.List(sbx.UID)})
		case http.MethodPost:
			s.startProcess(w, r, sbx, woken)
		default:
			writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "processes takes GET (list) and POST (start)")
		}
		return
	}
	p := s.processes.Get(sbx.UID, parts[0])
	if p == nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "Sandbox %q has no process %q", sbx.Name, parts[0])
		return
	}
	what := strings.Join(parts[1:], "/")
	switch {
	case what == "" && r.Method == http.MethodGet:
		writeJSON(w, p.View())
	case (what == "stdout" || what == "stderr") && r.Method == http.MethodGet:
		serveOutput(w, r, p, what)
	case what == "stdin" && r.Method == http.MethodPost:
		writeStdin(w, r, p)
	case what == "signal" && r.Method == http.MethodPost:
		signalProcess(w, r, p)
	case what == "resize" && r.Method == http.MethodPost:
		resizeProcess(w, r, p)
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound,
			"%s processes/%s/%s is not served: GET processes/ID, GET .../stdout, GET .../stderr, POST .../stdin, POST .../signal, POST .../resize", r.Method, p.ID(), what)
	}
}

// startProcess starts a background process in the Sandbox's primary. It runs under the agent's context, not
// the request's: it outlives the call, and ends with the agent.
func (s *Server) startProcess(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox, woken bool) {
	q := r.URL.Query()
	cmd := q["command"]
	if len(cmd) == 0 {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "a command is required: add command=... to the query, once per argument")
		return
	}
	if refused := s.awaitRunnable(r.Context(), sbx, woken); refused != nil {
		refused.write(w)
		return
	}
	p := processes.New(q.Get("id"), cmd, true)
	if err := p.SetTag(q.Get("tag")); err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
		return
	}
	tty := q.Get("tty") == "true"
	var sizes <-chan dd.TermSize
	if tty {
		size, err := termSize(q)
		if err != nil {
			writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
			return
		}
		sizes = p.OpenTerminal(size)
	}
	var in io.Reader
	if tty || q.Get("stdin") == "true" { // a terminal's input is how it is typed into
		in = p.OpenStdin()
	}
	// The process keeps the Sandbox awake while it runs, past the call that started it.
	awake, _, refused := s.wake(r.Context(), sbx)
	if refused != nil {
		refused.write(w)
		return
	}
	if !s.addProcess(w, sbx, p) {
		awake()
		return
	}
	// It gets the Sandbox's commandEnv, as an exec does (docs/pools.md).
	req := dd.StreamExecRequest{Command: cmd, Env: topology.CommandEnv(sbx.Spec.CommandEnv, nil), TTY: tty, Resize: sizes,
		Stdin: in, Stdout: p.Output("stdout"), Stderr: p.Output("stderr"), Signals: p.Signals()}
	go func() {
		defer awake()
		res, err := s.opts.Driver.StreamExec(s.base(), topology.NamesOf(sbx).Primary(), req)
		if pr, ok := in.(*io.PipeReader); ok {
			_ = pr.Close()
		}
		p.Finish(res, err)
	}()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(p.View())
}

// addProcess registers p, or answers why not.
func (s *Server) addProcess(w http.ResponseWriter, sbx *dsv1alpha1.Sandbox, p *processes.Entry) bool {
	err := s.processes.Add(sbx.UID, p)
	switch {
	case errors.Is(err, processes.ErrConflict):
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "Sandbox %q: %v", sbx.Name, err)
	case err != nil:
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
	}
	return err == nil
}

// serveOutput answers what the process wrote on one stream from byte from on (as much as is kept), and with
// follow what it writes next, until it ends or followFor passes. X-Dockside-Output-Start is the offset of the
// first byte sent: a client goes on from it plus what it read.
func serveOutput(w http.ResponseWriter, r *http.Request, p *processes.Entry, stream string) {
	out := p.Output(stream)
	if out == nil {
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "process %q is an exec: its output went to its client, and none is kept", p.ID())
		return
	}
	from, err := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	if err != nil && r.URL.Query().Has("from") || from < 0 {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "from=%q is not a byte offset", r.URL.Query().Get("from"))
		return
	}
	follow := r.URL.Query().Get("follow") == "true"
	data, start, over, changed := out.Since(from)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("X-Dockside-Output-Start", strconv.FormatInt(start, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	if !follow {
		return
	}
	flusher, _ := w.(http.Flusher)
	deadline := time.NewTimer(followFor)
	defer deadline.Stop()
	for next := start + int64(len(data)); !over; next += int64(len(data)) {
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		case <-r.Context().Done():
			return
		}
		data, _, over, changed = out.Since(next)
		if _, err := w.Write(data); err != nil {
			return
		}
	}
}

// writeStdin copies the body to the process's input; close=true closes the input after it.
func writeStdin(w http.ResponseWriter, r *http.Request, p *processes.Entry) {
	n, err := p.WriteStdin(r.Body, r.URL.Query().Get("close") == "true")
	switch {
	case errors.Is(err, processes.ErrNoStdin):
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "process %q was started without stdin=true: it has no input to write", p.ID())
	case err != nil:
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "writing the input of process %q after %d bytes: %v", p.ID(), n, err)
	default:
		writeSuccess(w, "%d bytes written", n)
	}
}

// signalProcess sends the named signal to the process's group.
func signalProcess(w http.ResponseWriter, r *http.Request, p *processes.Entry) {
	name := r.URL.Query().Get("signal")
	sig, ok := parseSignal(name)
	if !ok {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "signal=%q is not one of HUP, INT, QUIT, KILL, USR1, USR2, TERM, CONT, STOP (or its number)", name)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	switch err := p.Signal(ctx, sig); {
	case errors.Is(err, processes.ErrEnded) || dd.KindOf(err) == dd.KindConflict:
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "process %q has ended", p.ID())
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "signalling process %q: %v", p.ID(), err)
	default:
		writeSuccess(w, "sent SIG%s to process %q", strings.TrimPrefix(strings.ToUpper(name), "SIG"), p.ID())
	}
}

// termSize reads cols and rows, each 1 to 65535.
func termSize(q url.Values) (dd.TermSize, error) {
	var n [2]uint64
	for i, name := range []string{"cols", "rows"} {
		var err error
		if n[i], err = strconv.ParseUint(q.Get(name), 10, 16); err != nil || n[i] == 0 {
			return dd.TermSize{}, fmt.Errorf("%s=%q is not a terminal's size: give cols and rows, 1 to 65535", name, q.Get(name))
		}
	}
	return dd.TermSize{Width: uint16(n[0]), Height: uint16(n[1])}, nil
}

// resizeProcess gives the process's terminal the size cols x rows.
func resizeProcess(w http.ResponseWriter, r *http.Request, p *processes.Entry) {
	size, err := termSize(r.URL.Query())
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	switch err := p.Resize(ctx, size); {
	case errors.Is(err, processes.ErrNoTerminal):
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "process %q was started without tty=true: it has no terminal to resize", p.ID())
	case errors.Is(err, processes.ErrEnded):
		writeStatus(w, http.StatusConflict, metav1.StatusReasonConflict, "process %q has ended", p.ID())
	case err != nil:
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, "%v", err)
	default:
		writeSuccess(w, "terminal of process %q resized to %dx%d", p.ID(), size.Width, size.Height)
	}
}

// parseSignal reads TERM, SIGTERM, term or 15.
func parseSignal(name string) (syscall.Signal, bool) {
	if n, err := strconv.Atoi(name); err == nil {
		for _, sig := range signals {
			if int(sig) == n {
				return sig, true
			}
		}
		return 0, false
	}
	sig, ok := signals[strings.TrimPrefix(strings.ToUpper(name), "SIG")]
	return sig, ok
}

// processOf is the process an exec names with process=ID, registered while it runs so that it can be
// signalled; nil when it names none. ok is false when it was refused (answered).
func (s *Server) processOf(w http.ResponseWriter, r *http.Request, sbx *dsv1alpha1.Sandbox) (p *processes.Entry, ok bool) {
	id := r.URL.Query().Get("process")
	if id == "" {
		return nil, true
	}
	p = processes.New(id, r.URL.Query()["command"], false)
	if !s.addProcess(w, sbx, p) {
		return nil, false
	}
	return p, true
}
