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
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestTailOutputKeepsTheLastBytes(t *testing.T) {
	g := NewWithT(t)
	out := newTailOutput(8)
	_, _ = out.Write([]byte("hello "))
	data, start, over, _ := out.Since(0)
	g.Expect(string(data)).To(Equal("hello "))
	g.Expect(start).To(BeZero())
	g.Expect(over).To(BeFalse())
	_, _ = out.Write([]byte("world"))
	data, start, _, _ = out.Since(0)
	g.Expect(string(data)).To(Equal("lo world"), "the last 8 bytes")
	g.Expect(start).To(BeEquivalentTo(3), "what was dropped shows in the start offset")
	data, start, _, changed := out.Since(9)
	g.Expect(string(data)).To(Equal("ld"))
	g.Expect(start).To(BeEquivalentTo(9))
	out.Close()
	g.Expect(changed).To(BeClosed())
	data, start, over, _ = out.Since(100)
	g.Expect(data).To(BeEmpty())
	g.Expect(start).To(BeEquivalentTo(11), "past the end is the end")
	g.Expect(over).To(BeTrue())
}

func TestProcessTableBounds(t *testing.T) {
	g := NewWithT(t)
	tbl := newProcessTable()
	uid := types.UID("u1")
	g.Expect(tbl.add(uid, newProcess("Bad_ID", []string{"true"}, true))).To(MatchError(ContainSubstring("lowercase letters")))
	named := newProcess("web", []string{"true"}, true)
	g.Expect(tbl.add(uid, named)).To(Succeed())
	g.Expect(tbl.add(uid, newProcess("web", []string{"true"}, true))).To(MatchError(ContainSubstring(`"web" runs already`)))
	g.Expect(tbl.add(types.UID("u2"), newProcess("web", []string{"true"}, true))).To(Succeed(), "another Sandbox's names are its own")
	named.finish(dd.StreamExecResult{}, nil)
	g.Expect(tbl.add(uid, newProcess("web", []string{"true"}, true))).To(Succeed(), "an ended process gives way to a new one of its name")

	for range maxProcesses - 1 {
		g.Expect(tbl.add(uid, newProcess("", []string{"sleep"}, true))).To(Succeed())
	}
	g.Expect(tbl.add(uid, newProcess("", []string{"sleep"}, true))).To(MatchError(ContainSubstring("already runs 16 processes")))
	ended := tbl.list(uid)[3]
	tbl.get(uid, ended.ID).finish(dd.StreamExecResult{ExitCode: 1}, nil)
	g.Expect(tbl.add(uid, newProcess("", []string{"sleep"}, true))).To(Succeed(), "the oldest ended one is forgotten")
	g.Expect(tbl.get(uid, ended.ID)).To(BeNil())
	g.Expect(tbl.list(uid)).To(HaveLen(maxProcesses))
}

// A background process outlives its request: it is listed, its output and exit code are kept, its input is
// written, and it is signalled by its ID.
func TestBackgroundProcess(t *testing.T) {
	g := NewWithT(t)
	d, _ := runningPrimary(t)
	d.SetStreamExecHandler(func(ctx context.Context, _ string, req dd.StreamExecRequest) int {
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
	s := &Server{opts: Options{Driver: d}, processes: newProcessTable()}
	sbx := &dsv1alpha1.Sandbox{}
	sbx.Name, sbx.Namespace, sbx.UID = "sbx", "ns", "uid-1"
	sbx.Status.Phase, sbx.Status.TopologyGeneration = dsv1alpha1.SandboxRunning, 1
	call := func(method, rest, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, "/x"+rest, strings.NewReader(body))
		path, _, _ := strings.Cut(rest, "?")
		s.serveProcesses(w, r, sbx, path)
		return w
	}

	w := call("POST", "?command=sh&command=-c&command=job&id=job&stdin=true", "")
	g.Expect(w.Code).To(Equal(http.StatusCreated), w.Body.String())
	var p Process
	g.Expect(json.Unmarshal(w.Body.Bytes(), &p)).To(Succeed())
	g.Expect(p).To(HaveField("ID", "job"))
	g.Expect(p.Command).To(Equal([]string{"sh", "-c", "job"}))
	g.Expect(p.Running && p.Background).To(BeTrue())

	g.Eventually(func() string { return call("GET", "/job/stdout", "").Body.String() }, 10*time.Second).Should(Equal("started\n"))
	g.Expect(call("POST", "/job/stdin?close=true", "hi").Code).To(Equal(http.StatusOK))
	g.Eventually(func() string { return call("GET", "/job/stderr", "").Body.String() }, 10*time.Second).Should(Equal("read \"hi\"\n"))
	out := call("GET", "/job/stdout?from=3", "")
	g.Expect(out.Body.String()).To(Equal("rted\n"))
	g.Expect(out.Header().Get("X-Dockside-Output-Start")).To(Equal("3"))

	var list ProcessList
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
