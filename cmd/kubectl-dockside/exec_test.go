package main

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

func TestExecURL(t *testing.T) {
	g := NewWithT(t)
	u, err := execURL(&rest.Config{Host: "https://127.0.0.1:6443/prefix"}, "team-a", "shell", []string{"sh", "-c", "echo a&b"}, true, true, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Path).To(Equal("/prefix/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/sandboxes/shell/exec"))
	q := u.Query()
	g.Expect(q["command"]).To(Equal([]string{"sh", "-c", "echo a&b"}))
	g.Expect(q.Get("stdin")).To(Equal("true"))
	g.Expect(q.Get("tty")).To(Equal("true"))
	g.Expect(q.Get("stderr")).To(Equal("false"), "a terminal's output is one stream")
	g.Expect(q.Has("process")).To(BeFalse(), "a terminal carries Ctrl-C itself")

	u, err = execURL(&rest.Config{Host: "https://127.0.0.1:6443"}, "ns", "box", []string{"true"}, false, false, "kubectl-0a1b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.Query().Get("process")).To(Equal("kubectl-0a1b"), "named, so that Ctrl-C can be sent on as a signal")
	g.Expect(u.Query().Get("stderr")).To(Equal("true"))
	g.Expect(u.Query().Get("stdin")).To(Equal("false"))

	o := &execOptions{}
	sandbox, command, err := parseArgs(execFlags(o), splitShortFlags([]string{"-it", "shell", "--", "sh", "-it"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.stdin && o.tty).To(BeTrue(), "-it is -i -t")
	g.Expect(sandbox).To(Equal("shell"))
	g.Expect(command).To(Equal([]string{"sh", "-it"}), "the command's own flags are left alone")

	_, _, err = parseArgs(execFlags(&execOptions{}), []string{"--timeout", "5s", "shell", "--", "true"})
	g.Expect(err).To(MatchError(ContainSubstring("timeout")), "run's flags are not exec's")
}

func TestForwardSpec(t *testing.T) {
	g := NewWithT(t)
	svc, remote, local, err := forwardSpec([]string{"web:8080", "18080"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{svc, remote, local}).To(Equal([]any{"web", 8080, 18080}))
	svc, remote, local, err = forwardSpec([]string{"6379"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{svc, remote, local}).To(Equal([]any{"", 6379, 6379}), "LOCAL defaults to PORT, the primary to none")
	_, _, _, err = forwardSpec([]string{"web:http"})
	g.Expect(err).To(MatchError(ContainSubstring(`"http" is not a port`)))
	_, _, _, err = forwardSpec([]string{"80", "70000"})
	g.Expect(err).To(MatchError(ContainSubstring(`"70000" is not a port`)))
}

// A stream whose agent was killed ends as client-go reports a WebSocket closed without a close frame (gorilla's
// 1006) under its error stream; a refusal by the API server or a normal close is no broken stream.
func TestBrokenStream(t *testing.T) {
	g := NewWithT(t)
	cut := fmt.Errorf("error reading from error stream: %w", fmt.Errorf("next reader: %w",
		&websocket.CloseError{Code: websocket.CloseAbnormalClosure, Text: io.ErrUnexpectedEOF.Error()}))
	g.Expect(brokenStream(cut)).To(BeTrue())
	g.Expect(brokenStream(fmt.Errorf("read: %w", io.ErrUnexpectedEOF))).To(BeTrue())
	g.Expect(brokenStream(&websocket.CloseError{Code: websocket.CloseNormalClosure})).To(BeFalse())
	g.Expect(brokenStream(apierrors.NewForbidden(schema.GroupResource{Resource: "sandboxes/exec"}, "box", errors.New("no")))).To(BeFalse())
	g.Expect(brokenStream(nil)).To(BeFalse())
}
