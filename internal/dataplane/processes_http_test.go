package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/processes"
)

// A background process outlives its request: it is listed, its output and exit code are kept, its input is
// written, and it is signalled by its ID.
func TestBackgroundProcess(t *testing.T) {
	g := NewWithT(t)
	d, _ := runningPrimary(t)
	var env []dd.EnvVar
	d.SetStreamExecHandler(func(ctx context.Context, _ string, req dd.StreamExecRequest) int {
		env = req.Env
		_, _ = fmt.Fprintln(req.Stdout, "started")
		line, _ := io.ReadAll(req.Stdin) // until its input is closed
		_, _ = fmt.Fprintf(req.Stderr, "read %q\n", line)
		select {
		case sig := <-req.Signals:
			sig.Done <- nil
			return 128 + int(sig.Number)
		case <-ctx.Done():
			return 0
		}
	})
	call := processesCaller(d, []dsv1alpha1.ExecutionEnvVar{{Name: "GREETING", Value: "hi"}})

	w := call("POST", "?command=sh&command=-c&command=job&id=job&stdin=true", "")
	g.Expect(w.Code).To(Equal(http.StatusCreated), w.Body.String())
	var p processes.Process
	g.Expect(json.Unmarshal(w.Body.Bytes(), &p)).To(Succeed())
	g.Expect(p).To(HaveField("ID", "job"))
	g.Expect(p.Command).To(Equal([]string{"sh", "-c", "job"}))
	g.Expect(p.Running && p.Background).To(BeTrue())

	g.Eventually(func() string { return call("GET", "/job/stdout", "").Body.String() }, 10*time.Second).Should(Equal("started\n"))
	g.Expect(env).To(ContainElement(dd.EnvVar{Name: "GREETING", Value: "hi"}), "it gets the Sandbox's commandEnv, as an exec does")
	g.Expect(call("POST", "/job/stdin?close=true", "hi").Code).To(Equal(http.StatusOK))
	g.Eventually(func() string { return call("GET", "/job/stderr", "").Body.String() }, 10*time.Second).Should(Equal("read \"hi\"\n"))
	out := call("GET", "/job/stdout?from=3", "")
	g.Expect(out.Body.String()).To(Equal("rted\n"))
	g.Expect(out.Header().Get("X-Dockside-Output-Start")).To(Equal("3"))

	var list processes.List
	g.Expect(json.Unmarshal(call("GET", "", "").Body.Bytes(), &list)).To(Succeed())
	g.Expect(list.Items).To(ConsistOf(HaveField("ID", "job")))

	g.Expect(call("POST", "/job/signal?signal=bogus", "").Body.String()).To(ContainSubstring(`signal=\"bogus\" is not one of`))
	g.Expect(call("POST", "/job/signal?signal=SIGTERM", "").Code).To(Equal(http.StatusOK))
	g.Eventually(func() bool {
		g.Expect(json.Unmarshal(call("GET", "/job", "").Body.Bytes(), &p)).To(Succeed())
		return p.Running
	}, 10*time.Second).Should(BeFalse())
	g.Expect(p.ExitCode).To(HaveValue(Equal(128 + int(syscall.SIGTERM))))
	g.Expect(p.StdoutBytes).To(BeEquivalentTo(len("started\n")))
	g.Expect(call("POST", "/job/signal?signal=KILL", "").Code).To(Equal(http.StatusConflict), "an ended process takes no signal")
	follow := call("GET", "/job/stdout?follow=true", "")
	g.Expect(follow.Body.String()).To(Equal("started\n"), "following an ended process returns what is kept")
	g.Expect(call("GET", "/nope", "").Code).To(Equal(http.StatusNotFound))
	g.Expect(call("POST", "/nope/signal?signal=TERM", "").Body.String()).To(ContainSubstring(`has no process \"nope\"`), "the process, not the path")
	g.Expect(call("GET", "/job/stdout/more", "").Body.String()).To(ContainSubstring(`GET processes/job/stdout/more is not served`))
	g.Expect(call("POST", "", "").Body.String()).To(ContainSubstring("a command is required"))
}

// processesCaller serves calls of the processes subresource of a running Sandbox with that commandEnv, on
// the driver d; rest is what follows processes, with its query.
func processesCaller(d dd.Driver, env []dsv1alpha1.ExecutionEnvVar) func(method, rest, body string) *httptest.ResponseRecorder {
	s := &Server{opts: Options{Driver: d}, processes: processes.NewTable()}
	sbx := &dsv1alpha1.Sandbox{}
	sbx.Name, sbx.Namespace, sbx.UID = "sbx", "ns", "uid-1"
	sbx.Status.Phase, sbx.Status.TopologyGeneration = dsv1alpha1.SandboxRunning, 1
	sbx.Spec.CommandEnv = env
	return func(method, rest, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, "/x"+rest, strings.NewReader(body))
		path, _, _ := strings.Cut(rest, "?")
		s.serveProcesses(w, r, sbx, path, false)
		return w
	}
}

func TestParseSignal(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"TERM", "SIGTERM", "term", "15"} {
		sig, ok := parseSignal(name)
		g.Expect(ok).To(BeTrue(), name)
		g.Expect(sig).To(Equal(syscall.SIGTERM), name)
	}
	for _, name := range []string{"", "SIGBOGUS", "99"} {
		_, ok := parseSignal(name)
		g.Expect(ok).To(BeFalse(), name)
	}
}

// A process started with tty=true runs on a terminal of the size asked, takes input, is resized, and keeps
// its tag; one without a terminal cannot be resized.
func TestBackgroundProcessOnATerminal(t *testing.T) {
	g := NewWithT(t)
	d, _ := runningPrimary(t)
	sizes := make(chan dd.TermSize, 4)
	var tty bool
	d.SetStreamExecHandler(func(ctx context.Context, _ string, req dd.StreamExecRequest) int {
		tty = req.TTY
		if req.Resize != nil {
			go func() {
				for sz := range req.Resize {
					sizes <- sz
				}
			}()
		}
		if req.Stdin == nil {
			select {
			case sig := <-req.Signals:
				sig.Done <- nil
				return 128 + int(sig.Number)
			case <-ctx.Done():
				return 0
			}
		}
		line, _ := io.ReadAll(req.Stdin)
		_, _ = fmt.Fprintf(req.Stdout, "typed %q\r\n", line)
		return 3
	})
	call := processesCaller(d, nil)

	g.Expect(call("POST", "?command=bash&tty=true&cols=0&rows=24", "").Body.String()).To(ContainSubstring(`cols=\"0\" is not a terminal's size`))
	g.Expect(call("POST", "?command=bash&tag="+strings.Repeat("t", processes.MaxTagBytes+1), "").Code).To(Equal(http.StatusBadRequest))
	w := call("POST", "?command=bash&id=term&tty=true&cols=80&rows=24&tag=my+shell", "")
	g.Expect(w.Code).To(Equal(http.StatusCreated), w.Body.String())
	var p processes.Process
	g.Expect(json.Unmarshal(w.Body.Bytes(), &p)).To(Succeed())
	g.Expect(p).To(And(HaveField("TTY", true), HaveField("Tag", "my shell")))
	g.Eventually(sizes, 10*time.Second).Should(Receive(Equal(dd.TermSize{Width: 80, Height: 24})), "the first size")
	g.Expect(tty).To(BeTrue())

	g.Expect(call("POST", "/term/resize?cols=120&rows=40", "").Body.String()).To(ContainSubstring("resized to 120x40"))
	g.Eventually(sizes, 10*time.Second).Should(Receive(Equal(dd.TermSize{Width: 120, Height: 40})))
	g.Expect(call("POST", "/term/resize?cols=120", "").Code).To(Equal(http.StatusBadRequest))

	g.Expect(call("POST", "/term/stdin?close=true", "ls").Code).To(Equal(http.StatusOK), "a terminal takes input without stdin=true")
	g.Eventually(func() string { return call("GET", "/term/stdout", "").Body.String() }, 10*time.Second).Should(Equal("typed \"ls\"\r\n"))
	g.Eventually(func() bool {
		g.Expect(json.Unmarshal(call("GET", "/term", "").Body.Bytes(), &p)).To(Succeed())
		return p.Running
	}, 10*time.Second).Should(BeFalse())
	g.Expect(call("POST", "/term/resize?cols=10&rows=10", "").Body.String()).To(ContainSubstring("has ended"))

	g.Expect(call("POST", "?command=sleep&id=plain", "").Code).To(Equal(http.StatusCreated))
	g.Expect(call("POST", "/plain/resize?cols=10&rows=10", "").Body.String()).To(ContainSubstring("has no terminal to resize"))
	g.Expect(call("POST", "/plain/signal?signal=KILL", "").Code).To(Equal(http.StatusOK))
}
