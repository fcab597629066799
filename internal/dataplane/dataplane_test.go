package dataplane

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilexec "k8s.io/utils/exec"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestParseTarget(t *testing.T) {
	g := NewWithT(t)
	tg, ok := parseTarget("/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/sandboxes/shell/files/workspace/a.txt")
	g.Expect(ok).To(BeTrue())
	g.Expect(tg).To(Equal(target{Namespace: "team-a", Name: "shell", Subresource: "files", Rest: "/workspace/a.txt"}))
	tg, ok = parseTarget("/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/sandboxes/shell/exec")
	g.Expect(ok).To(BeTrue())
	g.Expect(tg.Rest).To(BeEmpty())
	for _, bad := range []string{
		"/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/sandboxes/shell",
		"/apis/subresources.dockside.dev/v1alpha1/namespaces/team-a/pods/shell/exec",
		"/apis/subresources.dockside.dev/v1alpha1/namespaces//sandboxes/shell/exec",
		"/api/v1/namespaces/team-a/pods/shell/exec",
	} {
		_, ok := parseTarget(bad)
		g.Expect(ok).To(BeFalse(), bad)
	}
}

func TestExecOptions(t *testing.T) {
	g := NewWithT(t)
	req := func(q string) *http.Request { return &http.Request{URL: &url.URL{RawQuery: q}} }
	cmd, opts, err := execOptions(req("command=sh&command=-c&command=echo+hi&stdin=true&stdout=1&stderr=true&tty=true"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd).To(Equal([]string{"sh", "-c", "echo hi"}))
	g.Expect(opts.Stdin && opts.Stdout && opts.TTY).To(BeTrue(), "true (client-go, Python) and 1 (the kubelet's form) both count")
	g.Expect(opts.Stderr).To(BeFalse(), "a terminal's output is one stream")
	_, _, err = execOptions(req("stdout=true"))
	g.Expect(err).To(MatchError(ContainSubstring("a command is required")))
	_, _, err = execOptions(req("command=ls&stdout=maybe"))
	g.Expect(err).To(MatchError(ContainSubstring(`stdout="maybe" is not true or false`)))
	_, _, err = execOptions(req("command=ls"))
	g.Expect(err).To(MatchError(ContainSubstring("at least one of stdin, stdout and stderr")))
}

func TestOutcomeStatus(t *testing.T) {
	g := NewWithT(t)
	g.Expect(outcomeStatus(nil).Status).To(Equal(metav1.StatusSuccess))
	st := outcomeStatus(utilexec.CodeExitError{Err: errors.New("exit 3"), Code: 3})
	g.Expect(st.Reason).To(Equal(metav1.StatusReason("NonZeroExitCode")))
	g.Expect(st.Details.Causes).To(ConsistOf(metav1.StatusCause{Type: "ExitCode", Message: "3"}), "what clients read the exit code from")
	st = outcomeStatus(errors.New("the container is paused"))
	g.Expect(st.Reason).To(Equal(metav1.StatusReasonInternalError))
	g.Expect(st.Message).To(ContainSubstring("the container is paused"))
}

func TestCallerHeadersRoundTrip(t *testing.T) {
	g := NewWithT(t)
	in := Caller{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes.example.com/x": {"a", "b"}}}
	h := http.Header{}
	h.Set("X-Remote-User", "forged") // what a client sent: a forwarding agent replaces it
	stripCallerHeaders(h)
	callerHeaders(h, in)
	resp, ok, err := peerHeaders.AuthenticateRequest(&http.Request{Header: h})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(callerOf(resp.User)).To(Equal(in))
	_, ok, _ = peerHeaders.AuthenticateRequest(&http.Request{Header: http.Header{}})
	g.Expect(ok).To(BeFalse(), "no user named")
}

// A Sandbox frozen for idleness is refused as Paused unless the call woke it, which it then may run in; its
// status is read, never rewritten.
func TestRunnableAsksWhetherTheCallWokeTheSandbox(t *testing.T) {
	g := NewWithT(t)
	sbx := &dsv1alpha1.Sandbox{}
	sbx.Name = "idle"
	sbx.Status.Phase = dsv1alpha1.SandboxPaused
	sbx.Status.Conditions = []metav1.Condition{{Type: dsv1alpha1.ConditionPaused, Status: metav1.ConditionTrue, Reason: dsv1alpha1.ReasonIdle}}
	refused := runnable(sbx, false)
	g.Expect(refused).NotTo(BeNil())
	g.Expect(refused.message).To(ContainSubstring(`Sandbox "idle" is Paused`))
	g.Expect(runnable(sbx, true)).To(BeNil())
	g.Expect(sbx.Status.Phase).To(Equal(dsv1alpha1.SandboxPaused))
	sbx.Status.Phase = dsv1alpha1.SandboxRunning
	g.Expect(runnable(sbx, false)).To(BeNil())
}
