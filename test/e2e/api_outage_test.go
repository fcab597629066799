//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/controlprocs"
)

// The outage spec's population and the length of its freeze (issue 30).
const (
	outageSessions = 20
	outageFreeze   = 60 * time.Second
	// outageDeadline is timeoutSeconds of the Execution whose deadline passes during the freeze: it starts
	// right before the freeze, and its deadline passes before the freeze ends.
	outageDeadline = 30
)

var _ = Describe("An API server that stops answering", Label("api-outage"), func() {
	It(fmt.Sprintf("costs nothing: through a %s SIGSTOP of kube-apiserver the agent runs on, %d sessions' commands end and report, a deadline is enforced, and an Isolated Sandbox downloads through the proxy",
		outageFreeze, outageSessions), func() {
		ns := newNamespace("outage")
		DeferCleanup(deleteAllIn, ns)
		logStart := logSize()
		DeferCleanup(func() { printAgentLogOnFailure(logStart) })
		port, serving, release, sent := slowInternet()

		var manifests strings.Builder
		for i := range outageSessions {
			fmt.Fprintf(&manifests, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: s-%02d\nspec:\n  image: dockside.dev/busybox:local\n  network:\n    mode: None\n", i)
		}
		fmt.Fprintf(&manifests, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: deadline\nspec:\n  image: dockside.dev/busybox:local\n  network:\n    mode: None\n")
		fmt.Fprintf(&manifests, "---\napiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: fetch\nspec:\n  image: dockside.dev/python:local\n  network:\n    mode: Isolated\n    allow: [\"127.0.0.1:%d\"]\n", port)
		apply(ns, manifests.String())
		for i := range outageSessions {
			waitFor(ns, fmt.Sprintf("sandbox/s-%02d", i), "condition=Ready", 5*time.Minute)
		}
		waitFor(ns, "sandbox/deadline", "condition=Ready", 5*time.Minute)
		waitFor(ns, "sandbox/fetch", "condition=Ready", 5*time.Minute)
		started := primaryStarts(ns)

		By("commands under way: each session's waits for a file the test writes during the outage, one sleeps past its deadline, and a download takes longer than the outage")
		var executions strings.Builder
		for i := range outageSessions {
			fmt.Fprintf(&executions, "---\n%s  timeoutSeconds: 600\n", execution(fmt.Sprintf("x-%02d", i), fmt.Sprintf("s-%02d", i),
				fmt.Sprintf("while [ ! -e /workspace/go ]; do sleep 0.2; done; echo done-%02d", i)))
		}
		fmt.Fprintf(&executions, "---\napiVersion: dockside.dev/v1alpha1\nkind: Execution\nmetadata:\n  name: download\nspec:\n  sandboxName: fetch\n  timeoutSeconds: 600\n  command: [python3, -c, %q, get, \"http://127.0.0.1:%d/slow\"]\n", egressClient, port)
		apply(ns, executions.String())
		names := append(executionNames(), "download")
		for _, name := range names {
			waitStarted(ns, name)
		}
		// The download is under way once the server has sent its first line.
		Eventually(serving).WithTimeout(2*time.Minute).Should(BeClosed(), "the download is under way before the freeze")
		// The one that runs past its deadline starts last, right before the freeze, so that its deadline falls
		// inside the freeze however long the others took to start on a loaded machine.
		apply(ns, fmt.Sprintf("%s  timeoutSeconds: %d\n", execution("late", "deadline", "sleep 600"), outageDeadline))
		waitStarted(ns, "late")
		names = append(names, "late")

		By("kube-apiserver frozen")
		pid, err := controlprocs.APIServer(cp.Config.Host)
		Expect(err).NotTo(HaveOccurred())
		agentPid := agent.Pid()
		thaw, err := controlprocs.Freeze(pid)
		Expect(err).NotTo(HaveOccurred())
		frozen := time.Now()
		thawed := false
		DeferCleanup(func() {
			if !thawed {
				Expect(thaw()).To(Succeed())
			}
		})

		By("the sessions' commands let go: they end while the API server is out")
		for i := range outageSessions {
			primary := onlyContainerByLabel(ns, fmt.Sprintf("s-%02d", i))
			_, err := docker("exec", primary, "touch", "/workspace/go")
			Expect(err).NotTo(HaveOccurred())
		}
		By("a new connection through the proxy is served from what the agent knew")
		fetch := onlyContainerByLabel(ns, "fetch")
		Expect(clientIn(fetch, "get", fmt.Sprintf("http://127.0.0.1:%d/", port))).To(Equal(answer{Status: 200, Body: "hello"}))
		By("the Execution past its deadline has its container killed")
		late := onlyContainerByLabel(ns, "deadline")
		Eventually(func() (string, error) { return docker("inspect", "-f", "{{.State.Running}}", late) }).
			WithTimeout(time.Until(frozen.Add(outageFreeze))).WithPolling(time.Second).Should(Equal("false"))

		time.Sleep(time.Until(frozen.Add(outageFreeze)))
		exited, err := agent.Exited()
		Expect(exited).To(BeFalse(), "the agent exited during the outage: %v", err)
		Expect(thaw()).To(Succeed())
		thawed = true
		release()

		By("every outcome reported once the API server answers")
		for i, name := range executionNames() {
			waitFor(ns, "execution/"+name, "jsonpath={.status.phase}=Succeeded", 5*time.Minute)
			Expect(field(ns, "execution/"+name, "{.status.stdout}")).To(Equal(fmt.Sprintf("done-%02d\n", i)))
		}
		waitFor(ns, "execution/late", "jsonpath={.status.phase}=Failed", 5*time.Minute)
		Expect(field(ns, "execution/late", "{.status.reason}")).To(Equal(dsv1alpha1.ReasonDeadlineExceeded))
		waitFor(ns, "execution/download", "jsonpath={.status.phase}=Succeeded", 5*time.Minute)
		download := decode(field(ns, "execution/download", "{.status.stdout}"))
		Expect(download.Status).To(Equal(200))
		// Its first line came before the freeze and "end" only after the thaw: the connection lived across it.
		Expect(download.Body).To(HaveSuffix("end\n"))
		Expect(download.Body).To(Equal(sent()), "every line the server sent across the freeze")

		By("nothing restarted: the same agent, the same containers, every session Ready")
		Expect(agent.Pid()).To(Equal(agentPid))
		log := logFrom(logStart)
		Expect(log).To(ContainSubstring("The API server does not answer"))
		Expect(log).NotTo(ContainSubstring("leader election lost"))
		after := primaryStarts(ns)
		delete(started, "deadline")
		delete(after, "deadline")
		Expect(after).To(Equal(started))
		for name := range started {
			waitFor(ns, "sandbox/"+name, "condition=Ready", time.Minute)
			Expect(field(ns, "sandbox/"+name, `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)).NotTo(Equal("True"), name)
		}
		AddReportEntry("api outage", fmt.Sprintf("kube-apiserver frozen %s; %d Executions and a download across it reported", outageFreeze,
			len(names)), ReportEntryVisibilityAlways)
	})
})

// executionNames are the names of the sessions' Executions of the outage spec.
func executionNames() []string {
	var names []string
	for i := range outageSessions {
		names = append(names, fmt.Sprintf("x-%02d", i))
	}
	return names
}

// waitStarted waits until Execution name's command has started: its exec is recorded, which the agent writes
// before it starts the command (docs/design/executions.md). Running alone is not enough: a command whose exec
// is not recorded yet when the API server freezes starts only after the thaw.
func waitStarted(ns, name string) {
	GinkgoHelper()
	waitFor(ns, "execution/"+name, "jsonpath={.status.exec.id}", 5*time.Minute)
}

// primaryStarts maps each Sandbox of ns to its primary container's ID and start time, as Docker has them.
func primaryStarts(ns string) map[string]string {
	GinkgoHelper()
	out, err := docker("ps", "-a", "--filter", "label="+dsv1alpha1.LabelNode+"="+node, "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
		"--filter", "label="+dsv1alpha1.LabelRole+"="+dsv1alpha1.RolePrimary, "--format", `{{.Label "`+dsv1alpha1.LabelName+`"}}={{.ID}}`)
	Expect(err).NotTo(HaveOccurred())
	starts := map[string]string{}
	for _, line := range strings.Fields(out) {
		name, id, _ := strings.Cut(line, "=")
		at, err := docker("inspect", "-f", "{{.State.StartedAt}}", id)
		Expect(err).NotTo(HaveOccurred())
		starts[name] = id + "@" + at
	}
	return starts
}

// onlyContainerByLabel is the one primary container of Sandbox name, found by label without the API server.
func onlyContainerByLabel(ns, name string) string {
	GinkgoHelper()
	out, err := docker("ps", "-aq", "--filter", "label="+dsv1alpha1.LabelNode+"="+node, "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
		"--filter", "label="+dsv1alpha1.LabelName+"="+name, "--filter", "label="+dsv1alpha1.LabelRole+"="+dsv1alpha1.RolePrimary)
	Expect(err).NotTo(HaveOccurred())
	ids := strings.Fields(out)
	Expect(ids).To(HaveLen(1), "primary of %s", name)
	return ids[0]
}

// slowInternet is the spec's stand-in for a server on the internet, on the host's loopback: "/" answers
// hello, "/slow" sends a line a second until release is called, then "end"; serving closes at its first line,
// and sent is what "/slow" sent.
func slowInternet() (port int, serving <-chan struct{}, release func(), sent func() string) {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	released, started := make(chan struct{}), make(chan struct{})
	markStarted := sync.OnceFunc(func() { close(started) })
	var mu sync.Mutex
	var body strings.Builder
	send := func(w http.ResponseWriter, line string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(w, line)
		body.WriteString(line)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; ; i++ {
			send(w, fmt.Sprintf("chunk %03d\n", i))
			w.(http.Flusher).Flush()
			markStarted()
			select {
			case <-r.Context().Done():
				return
			case <-released:
				send(w, "end\n")
				return
			case <-time.After(time.Second):
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	DeferCleanup(srv.Close)
	sentSoFar := func() string {
		mu.Lock()
		defer mu.Unlock()
		return body.String()
	}
	return l.Addr().(*net.TCPAddr).Port, started, sync.OnceFunc(func() { close(released) }), sentSoFar
}
