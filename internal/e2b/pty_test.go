package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process/processconnect"
)

// fakeProc is one process of fakeProcesses: a terminal echoes its input, as a shell's line discipline does.
type fakeProc struct {
	info  processInfo
	out   []byte
	sizes []string // "COLSxROWS", the first from the start
}

// fakeProcesses is an API server whose processes subresource of sandbox sbx keeps state as the data plane
// does (docs/design/dataplane.md, "Signals and background processes"): started processes are listed with
// their tty and tag, a terminal's input comes back on its stdout, resizes are recorded, KILL ends one.
type fakeProcesses struct {
	mu      sync.Mutex
	procs   map[string]*fakeProc
	changed chan struct{}
	starts  []string // the queries of the starts
}

const fakeProcsPath = "/apis/subresources.dockside.dev/v1alpha1/namespaces/ns-a/sandboxes/sbx/processes"

func newFakeProcesses(t *testing.T) (*fakeProcesses, *httptest.Server) {
	t.Helper()
	f := &fakeProcesses{procs: map[string]*fakeProc{}, changed: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

// wake tells followers that something changed; f.mu is held.
func (f *fakeProcesses) wake() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeProcesses) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
		_, _ = io.WriteString(w, `{"status":{"userInfo":{"username":"system:serviceaccount:ns-a:agent"}}}`)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, fakeProcsPath)
	if !ok {
		http.NotFound(w, r)
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	if parts[0] == "" {
		if r.Method == http.MethodPost {
			f.starts = append(f.starts, r.URL.RawQuery)
			p := &fakeProc{info: processInfo{ID: q.Get("id"), Command: q["command"], Background: true, Running: true,
				TTY: q.Get("tty") == "true", Tag: q.Get("tag")}}
			if p.info.TTY {
				p.sizes = []string{q.Get("cols") + "x" + q.Get("rows")}
				p.out = []byte("$ ")
				p.info.StdoutBytes = 2
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
		p.out = append(p.out, data...)
		p.info.StdoutBytes = int64(len(p.out))
		f.wake()
		_, _ = io.WriteString(w, `{}`)
	case "resize":
		if !p.info.TTY {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"kind":"Status","code":409,"message":"no terminal to resize"}`)
			return
		}
		p.sizes = append(p.sizes, q.Get("cols")+"x"+q.Get("rows"))
		_, _ = io.WriteString(w, `{}`)
	case "signal":
		p.info.Running, p.info.ExitCode = false, new(137)
		f.wake()
		_, _ = io.WriteString(w, `{}`)
	case "stdout", "stderr":
		from, _ := strconv.Atoi(q.Get("from"))
		data := []byte(nil)
		if what == "stdout" {
			data = p.out
		}
		from = min(from, len(data))
		// A follow with nothing new waits for a change, for a moment, as the data plane's does for 45 s.
		if from == len(data) && p.info.Running {
			changed := f.changed
			f.mu.Unlock()
			select {
			case <-changed:
			case <-time.After(time.Second):
			case <-r.Context().Done():
			}
			f.mu.Lock()
			if what == "stdout" {
				data = p.out
			}
		}
		w.Header().Set("X-Dockside-Output-Start", strconv.Itoa(from))
		_, _ = w.Write(data[from:])
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeProcesses) sizesOf(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.procs[id].sizes...)
}

// processClient is a client of a gateway in front of a fakeProcesses.
func processClient(t *testing.T) (*fakeProcesses, processconnect.ProcessClient) {
	t.Helper()
	f, api := newFakeProcesses(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	t.Cleanup(gw.Close)
	return f, processconnect.NewProcessClient(http.DefaultClient, gw.URL, connect.WithProtoJSON())
}

func envdRequest[T any](msg *T) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("E2b-Sandbox-Id", "sbx")
	req.Header().Set("X-Access-Token", "key-a")
	return req
}

// events collects a process stream's events on a channel, closed at its end.
func events(stream interface {
	Receive() bool
	Err() error
}, event func() *process.ProcessEvent) <-chan *process.ProcessEvent {
	ch := make(chan *process.ProcessEvent, 64)
	go func() {
		defer close(ch)
		for stream.Receive() {
			ch <- event()
		}
	}()
	return ch
}

// ptyText reads pty events until their text holds want, and fails on any other kind of data.
func ptyText(g Gomega, ch <-chan *process.ProcessEvent, want string) {
	var got strings.Builder
	g.Eventually(func() string {
		select {
		case ev := <-ch:
			g.Expect(ev.GetData().GetStdout()).To(BeNil(), "a terminal's output is pty data only")
			got.Write(ev.GetData().GetPty())
		default:
		}
		return got.String()
	}, 10*time.Second, 10*time.Millisecond).Should(ContainSubstring(want))
}

// A PTY as the SDK drives it (sandbox.pty.create, send_stdin, resize, kill): Start with a size and a tag
// gives pty data events; input, resize, Connect, List and signals reach the process by pid or by tag.
func TestPTYThroughTheProcessesSubresource(t *testing.T) {
	g := NewWithT(t)
	f, cl := processClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	start, err := cl.Start(ctx, envdRequest(&process.StartRequest{
		Process: &process.ProcessConfig{Cmd: "/bin/bash", Args: []string{"-i", "-l"}, Envs: map[string]string{"TERM": "xterm-256color"}},
		Pty:     &process.PTY{Size: &process.PTY_Size{Cols: 100, Rows: 30}}, Tag: new("term")}))
	g.Expect(err).NotTo(HaveOccurred())
	evs := events(start, func() *process.ProcessEvent { return start.Msg().GetEvent() })
	var first *process.ProcessEvent
	g.Eventually(evs, 10*time.Second).Should(Receive(&first))
	pid := first.GetStart().GetPid()
	g.Expect(pid).NotTo(BeZero())
	id := processID(pid)
	g.Expect(f.starts).To(ConsistOf(And(ContainSubstring("tty=true"), ContainSubstring("cols=100"), ContainSubstring("rows=30"),
		ContainSubstring("tag=term"), ContainSubstring("id="+id))))
	ptyText(g, evs, "$ ")

	byPid := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: pid}}
	byTag := &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: "term"}}
	_, err = cl.SendInput(ctx, envdRequest(&process.SendInputRequest{Process: byPid, Input: &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: []byte("ls\n")}}}))
	g.Expect(err).NotTo(HaveOccurred())
	ptyText(g, evs, "ls\n")

	_, err = cl.Update(ctx, envdRequest(&process.UpdateRequest{Process: byPid, Pty: &process.PTY{Size: &process.PTY_Size{Cols: 120, Rows: 40}}}))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cl.Update(ctx, envdRequest(&process.UpdateRequest{Process: byTag, Pty: &process.PTY{Size: &process.PTY_Size{Cols: 60}}}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.sizesOf(id)).To(Equal([]string{"100x30", "120x40", "60x24"}), "the start's, then each Update's (a missing side is the default)")

	list, err := cl.List(ctx, envdRequest(&process.ListRequest{}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(list.Msg.GetProcesses()).To(ConsistOf(And(HaveField("Pid", pid), HaveField("Tag", HaveValue(Equal("term"))),
		HaveField("Config.Cmd", "/bin/bash"), HaveField("Config.Envs", HaveKeyWithValue("TERM", "xterm-256color")))))

	conn, err := cl.Connect(ctx, envdRequest(&process.ConnectRequest{Process: byTag}))
	g.Expect(err).NotTo(HaveOccurred())
	connEvs := events(conn, func() *process.ProcessEvent { return conn.Msg().GetEvent() })
	g.Eventually(connEvs, 10*time.Second).Should(Receive(HaveField("Event", HaveField("Start.Pid", pid))), "the tag's process")

	in := cl.StreamInput(ctx)
	in.RequestHeader().Set("E2b-Sandbox-Id", "sbx")
	in.RequestHeader().Set("X-Access-Token", "key-a")
	g.Expect(in.Send(&process.StreamInputRequest{Event: &process.StreamInputRequest_Start{Start: &process.StreamInputRequest_StartEvent{Process: byTag}}})).To(Succeed())
	g.Expect(in.Send(&process.StreamInputRequest{Event: &process.StreamInputRequest_Data{Data: &process.StreamInputRequest_DataEvent{
		Input: &process.ProcessInput{Input: &process.ProcessInput_Pty{Pty: []byte("exit\n")}}}}})).To(Succeed())
	_, err = in.CloseAndReceive()
	g.Expect(err).NotTo(HaveOccurred())
	ptyText(g, evs, "exit\n")
	ptyText(g, connEvs, "exit\n")

	_, err = cl.SendSignal(ctx, envdRequest(&process.SendSignalRequest{Process: byTag, Signal: process.Signal_SIGNAL_SIGKILL}))
	g.Expect(err).NotTo(HaveOccurred())
	for _, ch := range []<-chan *process.ProcessEvent{evs, connEvs} {
		var end *process.ProcessEvent_EndEvent
		g.Eventually(func() *process.ProcessEvent_EndEvent {
			if ev, ok := <-ch; ok && ev.GetEnd() != nil {
				end = ev.GetEnd()
			}
			return end
		}, 10*time.Second).ShouldNot(BeNil())
		g.Expect(end.GetExitCode()).To(BeEquivalentTo(137))
	}
	g.Eventually(evs, 10*time.Second).Should(BeClosed())
	g.Expect(start.Err()).NotTo(HaveOccurred(), "read once its reader ended")

	_, err = cl.SendInput(ctx, envdRequest(&process.SendInputRequest{Process: byTag, Input: &process.ProcessInput{}}))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound), "an ended process is not selected by its tag")
	_, err = cl.CloseStdin(ctx, envdRequest(&process.CloseStdinRequest{Process: &process.ProcessSelector{Selector: &process.ProcessSelector_Tag{Tag: "nope"}}}))
	g.Expect(err).To(MatchError(ContainSubstring(`no running process has the tag "nope"`)))
	_, err = cl.CloseStdin(ctx, envdRequest(&process.CloseStdinRequest{}))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeInvalidArgument))
}

// A process started without a pty streams stdout and stderr, and refuses a resize as envd does.
func TestUpdateOfAProcessWithoutATerminal(t *testing.T) {
	g := NewWithT(t)
	f, cl := processClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start, err := cl.Start(ctx, envdRequest(&process.StartRequest{Process: &process.ProcessConfig{Cmd: "cat"}, Stdin: new(true)}))
	g.Expect(err).NotTo(HaveOccurred())
	evs := events(start, func() *process.ProcessEvent { return start.Msg().GetEvent() })
	var first *process.ProcessEvent
	g.Eventually(evs, 10*time.Second).Should(Receive(&first))
	sel := &process.ProcessSelector{Selector: &process.ProcessSelector_Pid{Pid: first.GetStart().GetPid()}}
	g.Expect(f.starts).To(ConsistOf(And(ContainSubstring("stdin=true"), Not(ContainSubstring("tty")))))
	_, err = cl.Update(ctx, envdRequest(&process.UpdateRequest{Process: sel}))
	g.Expect(err).NotTo(HaveOccurred(), "an Update without a pty changes nothing")
	_, err = cl.Update(ctx, envdRequest(&process.UpdateRequest{Process: sel, Pty: &process.PTY{Size: &process.PTY_Size{Cols: 1, Rows: 1}}}))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeFailedPrecondition))
	_, err = cl.SendInput(ctx, envdRequest(&process.SendInputRequest{Process: sel, Input: &process.ProcessInput{Input: &process.ProcessInput_Stdin{Stdin: []byte("x")}}}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(evs, 10*time.Second).Should(Receive(HaveField("Event", HaveField("Data.Output", HaveField("Stdout", []byte("x"))))))
	_, err = cl.SendSignal(ctx, envdRequest(&process.SendSignalRequest{Process: sel, Signal: process.Signal_SIGNAL_SIGKILL}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(evs, 10*time.Second).Should(BeClosed())
}
