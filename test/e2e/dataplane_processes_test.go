//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"

	dpprocesses "github.com/dockside-dev/dockside/internal/dataplane/processes"
	"github.com/dockside-dev/dockside/test/internal/agentproc"
	"github.com/dockside-dev/dockside/test/internal/sandboxexec"
	"github.com/dockside-dev/dockside/test/internal/syncbuffer"
)

// processes sends method to .../sandboxes/name/processes+pathQuery through the API server as the
// suite's admin, and returns the status code and body.
func processes(ns, name, method, pathQuery string) (int, string) {
	GinkgoHelper()
	code, body, err := sandboxexec.Processes(cp.Config, method, ns, name, pathQuery)
	Expect(err).NotTo(HaveOccurred())
	return code, body
}

// pluginCommand is kubectl dockside with args, as a user runs it.
func pluginCommand(args ...string) *exec.Cmd {
	GinkgoHelper()
	bin, err := filepath.Abs(agentproc.BinDir())
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(cp.KubectlPath, append([]string{"dockside"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// startLines starts cmd and hands on its stdout line by line; the channel closes when stdout ends. Its stderr
// is kept for failure messages.
func startLines(cmd *exec.Cmd) (<-chan string, *syncbuffer.Buffer) {
	GinkgoHelper()
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	stderr := &syncbuffer.Buffer{}
	cmd.Stderr = stderr
	Expect(cmd.Start()).To(Succeed())
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines, stderr
}

var _ = Describe("the data plane: processes, signals and port-forward", Ordered, func() {
	var ns string

	BeforeAll(func() {
		ns = newNamespace("dpprocs")
		apply(ns, redisService)
		apply(ns, "apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: box}\n"+
			"spec: {image: dockside.dev/busybox:local, services: [redis], resources: {pids: 24}}\n")
		DeferCleanup(func() {
			deleteAndExpectGone(ns, "box")
			_, err := kubectl("delete", "-n", ns, "sandboxservice", "redis", "--wait=true")
			Expect(err).NotTo(HaveOccurred())
		})
		waitFor(ns, "sandbox/box", "condition=Ready", 5*time.Minute)
		dataPlaneServes(ns, "box")
	})

	// A background process lives in the primary: the container's pids limit (24) holds it and what it forks.
	// Killed, its children fall to the primary's PID 1, the daemon's init, which reaps them: without it they
	// stayed zombies of the session's shell, held the pids, and the next exec failed in runc (decision 0027).
	It("counts a background process and its children against the Sandbox's pids", func() {
		start := url.Values{"id": {"forks"}, "command": {"sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 600 & i=$((i+1)); done; echo forked; wait"}}
		code, body := processes(ns, "box", "POST", "?"+start.Encode())
		Expect(code).To(Equal(http.StatusCreated), body)
		Eventually(func() string {
			_, out := processes(ns, "box", "GET", "/forks/stderr")
			return out
		}).WithTimeout(2*time.Minute).Should(ContainSubstring("can't fork"), "the fork past the limit fails")
		top, err := docker("top", onlyContainer(ns, "box", "primary"), "-o", "pid,args")
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(top, "sleep 600")).To(BeNumerically("<", 24))
		// The shell may have exited at the failed fork (409: ended) or gone on to wait: either way KILL ends it all.
		code, body = processes(ns, "box", "POST", "/forks/signal?signal=KILL")
		Expect(code).To(BeElementOf(http.StatusOK, http.StatusConflict), body)
		Eventually(func() bool {
			var p dpprocesses.Process
			_, body := processes(ns, "box", "GET", "/forks")
			Expect(json.Unmarshal([]byte(body), &p)).To(Succeed())
			return p.Running
		}).WithTimeout(time.Minute).Should(BeFalse())
		Eventually(func() (string, error) {
			return docker("top", onlyContainer(ns, "box", "primary"), "-o", "pid,args")
		}).WithTimeout(time.Minute).ShouldNot(ContainSubstring("sleep 600"), "what it started ends with it")
		top, err = docker("top", onlyContainer(ns, "box", "primary"), "-o", "pid,args")
		Expect(err).NotTo(HaveOccurred())
		Expect(top).To(ContainSubstring("docker-init -- "), "the primary's PID 1 is the daemon's init")
		res := dockside("exec", "", "-n", ns, "box", "--", "sh", "-c", "sleep 0 & wait; echo after")
		Expect(res.code).To(BeZero(), "the pids are free again: %s", res.stderr)
		Expect(res.stdout).To(Equal("after\n"))
	})

	It("runs a background process that outlives its call, lists it, keeps its output and signals it by handle", func() {
		start := url.Values{"id": {"job"}, "command": {"sh", "-c", `trap "echo term; exit 4" TERM; echo up; while :; do sleep 1; done`}}
		code, body := processes(ns, "box", "POST", "?"+start.Encode())
		Expect(code).To(Equal(http.StatusCreated), body)
		Eventually(func() string {
			_, out := processes(ns, "box", "GET", "/job/stdout")
			return out
		}).WithTimeout(time.Minute).Should(Equal("up\n"), "the call that started it is long over")
		code, body = processes(ns, "box", "GET", "")
		Expect(code).To(Equal(http.StatusOK), body)
		var list dpprocesses.List
		Expect(json.Unmarshal([]byte(body), &list)).To(Succeed())
		Expect(list.Items).To(ContainElement(And(HaveField("ID", "job"), HaveField("Running", true), HaveField("Background", true))))

		code, body = processes(ns, "box", "POST", "/job/signal?signal=TERM")
		Expect(code).To(Equal(http.StatusOK), func() string {
			_, job := processes(ns, "box", "GET", "/job")
			_, stderr := processes(ns, "box", "GET", "/job/stderr")
			return fmt.Sprintf("%s; the process: %s; its stderr: %q", body, job, stderr)
		})
		var p dpprocesses.Process
		Eventually(func() bool {
			_, body := processes(ns, "box", "GET", "/job")
			Expect(json.Unmarshal([]byte(body), &p)).To(Succeed())
			return p.Running
		}).WithTimeout(time.Minute).Should(BeFalse())
		Expect(p.ExitCode).To(HaveValue(Equal(4)), "its trap ran: %+v", p)
		_, out := processes(ns, "box", "GET", "/job/stdout")
		Expect(out).To(Equal("up\nterm\n"))
		code, body = processes(ns, "box", "POST", "/job/signal?signal=TERM")
		Expect(code).To(Equal(http.StatusConflict), body)
		Expect(body).To(ContainSubstring(`process \"job\" has ended`))
	})

	It("lists processes and signals them by ID through kubectl dockside ps and kill, with their exit codes", func() {
		start := url.Values{"id": {"svc"}, "command": {"sh", "-c", `trap "exit 5" TERM; echo up; while :; do sleep 1; done`}}
		code, body := processes(ns, "box", "POST", "?"+start.Encode())
		Expect(code).To(Equal(http.StatusCreated), body)
		Eventually(func() string {
			_, out := processes(ns, "box", "GET", "/svc/stdout")
			return out
		}).WithTimeout(time.Minute).Should(Equal("up\n"))
		// An exec without a terminal names itself (kubectl-...), and ps lists it too.
		cmd := pluginCommand("exec", "-n", ns, "box", "--", "sh", "-c", "echo ready; exec sleep 300")
		lines, stderr := startLines(cmd)
		DeferCleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		Eventually(lines, time.Minute).Should(Receive(Equal("ready")), "stderr: %s", stderr.String())

		res := dockside("ps", "", "-n", ns, "box")
		Expect(res.code).To(BeZero(), res.stderr)
		Expect(res.stdout).To(HavePrefix("ID "))
		Expect(res.stdout).To(MatchRegexp(`(?m)^svc +background +Running +\S+ +sh -c trap "exit 5" TERM; echo up;`))
		execLine := regexp.MustCompile(`(?m)^(kubectl-[0-9a-f]+) +exec +Running +\S+ +sh -c echo ready; exec sleep 300$`).FindStringSubmatch(res.stdout)
		Expect(execLine).To(HaveLen(2), res.stdout)

		res = dockside("kill", "", "-n", ns, "box", "svc")
		Expect(res.code).To(BeZero(), res.stderr)
		Expect(res.stdout).To(Equal("sent SIGTERM to process \"svc\"\n"))
		Eventually(func() string {
			return dockside("ps", "", "-n", ns, "box").stdout
		}).WithTimeout(time.Minute).Should(MatchRegexp(`(?m)^svc +background +Exited\(5\) `), "its trap ran")
		res = dockside("kill", "", "-n", ns, "box", "svc", "-s", "KILL")
		Expect(res.code).To(Equal(4), "ended already: %s", res.stderr)
		Expect(res.stderr).To(ContainSubstring(`process "svc" has ended`))

		res = dockside("kill", "", "-n", ns, "box", execLine[1], "-s", "KILL")
		Expect(res.code).To(BeZero(), res.stderr)
		err := cmd.Wait()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "killed: %v; stderr: %s", err, stderr.String())
		Expect(exit.ExitCode()).To(Equal(137), "stderr: %s", stderr.String())

		res = dockside("kill", "", "-n", ns, "box", "nope")
		Expect(res.code).To(Equal(1), res.stderr)
		Expect(res.stderr).To(ContainSubstring(`Sandbox "box" has no process "nope"`))
		res = dockside("kill", "", "-n", ns, "box", "svc", "-s", "BOGUS")
		Expect(res.code).To(Equal(2), res.stderr)
		Expect(res.stderr).To(ContainSubstring(`signal="BOGUS" is not one of`))
		res = dockside("ps", "", "-n", ns, "missing")
		Expect(res.code).To(Equal(1), res.stderr)
	})

	It("sends Ctrl-C on to a command without a terminal (kubectl dockside exec)", func() {
		cmd := pluginCommand("exec", "-n", ns, "box", "--", "sh", "-c", `trap "echo interrupted; exit 9" INT; echo ready; while :; do sleep 1; done`)
		lines, stderr := startLines(cmd)
		Eventually(lines, time.Minute).Should(Receive(Equal("ready")), "stderr: %s", stderr.String())
		Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
		Eventually(lines, time.Minute).Should(Receive(Equal("interrupted")), "stderr: %s", stderr.String())
		err := cmd.Wait()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "exit code 9, not %v; stderr: %s", err, stderr.String())
		Expect(exit.ExitCode()).To(Equal(9), "the command's trap ran: stderr: %s", stderr.String())
	})

	It("forwards a local port to the Sandbox's redis (kubectl dockside port-forward, plain SPDY)", func() {
		local := freePort()
		cmd := pluginCommand("port-forward", "-n", ns, "box", "redis:6379", fmt.Sprint(local))
		cmd.Env = append(cmd.Env, "KUBECTL_PORT_FORWARD_WEBSOCKETS=false")
		out := &syncbuffer.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		Expect(cmd.Start()).To(Succeed())
		DeferCleanup(func() {
			Expect(cmd.Process.Signal(os.Interrupt)).To(Succeed())
			Expect(cmd.Wait()).To(Succeed(), out.String())
		})
		Eventually(out.String, time.Minute).Should(ContainSubstring(fmt.Sprintf("Forwarding from 127.0.0.1:%d -> 6379", local)))
		redisAnswers(local, out)
	})

	// kubectl 1.31 and later tunnel SPDY through a WebSocket; this dialer has no fallback to plain SPDY.
	It("forwards over kubectl's WebSocket tunnel (client-go's SPDY-over-WebSocket dialer)", func() {
		base, _, err := rest.DefaultServerUrlFor(cp.Config)
		Expect(err).NotTo(HaveOccurred())
		u := base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", "box", "portforward")
		u.RawQuery = url.Values{"service": {"redis"}}.Encode()
		dialer, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, cp.Config)
		Expect(err).NotTo(HaveOccurred())
		local, stop, ready := freePort(), make(chan struct{}), make(chan struct{})
		out := &syncbuffer.Buffer{}
		fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:6379", local)}, stop, ready, out, out)
		Expect(err).NotTo(HaveOccurred())
		forwarded := make(chan error, 1)
		go func() { forwarded <- fw.ForwardPorts() }()
		DeferCleanup(func() {
			close(stop)
			Eventually(forwarded, time.Minute).Should(Receive(BeNil()), out.String())
		})
		Eventually(ready, time.Minute).Should(BeClosed(), out.String())
		redisAnswers(local, out)
	})
})

// redisAnswers talks to redis through the forwarded local port: PING, SET, GET; out is the forwarder's log.
func redisAnswers(local int, out fmt.Stringer) {
	GinkgoHelper()
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 30*time.Second)
	Expect(err).NotTo(HaveOccurred(), out.String())
	defer conn.Close()
	Expect(conn.SetDeadline(time.Now().Add(time.Minute))).To(Succeed())
	r := bufio.NewReader(conn)
	for _, c := range []struct{ send, want string }{
		{"PING\r\n", "+PONG\r\n"},
		{"SET dockside e2e\r\n", "+OK\r\n"},
		{"GET dockside\r\n", "$3\r\n"},
	} {
		_, err = io.WriteString(conn, c.send)
		Expect(err).NotTo(HaveOccurred())
		line, err := r.ReadString('\n')
		Expect(err).NotTo(HaveOccurred(), out.String())
		Expect(line).To(Equal(c.want), "redis answers %q through the API server and the agent", c.send)
	}
	line, err := r.ReadString('\n')
	Expect(err).NotTo(HaveOccurred())
	Expect(line).To(Equal("e2e\r\n"))
}
