//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/dockside-dev/dockside/test/internal/loopback"
	"github.com/dockside-dev/dockside/test/internal/sandboxexec"
	"github.com/dockside-dev/dockside/test/internal/syncbuffer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// oneSize is a terminal whose size is set once.
type oneSize struct {
	ctx  context.Context
	sent bool
}

func (q *oneSize) Next() *remotecommand.TerminalSize {
	if !q.sent {
		q.sent = true
		return &remotecommand.TerminalSize{Width: 123, Height: 45}
	}
	<-q.ctx.Done()
	return nil
}

// freePort is a loopback port nothing listens on now.
func freePort() int {
	GinkgoHelper()
	ports, err := loopback.FreePorts(1)
	Expect(err).NotTo(HaveOccurred())
	return ports[0]
}

// clientExec runs command in the Sandbox with client-go's executor of protocol ("websocket" or "spdy").
func clientExec(ctx context.Context, cfg *rest.Config, protocol, ns, name string, tty bool, opts remotecommand.StreamOptions, command ...string) error {
	executor, err := sandboxexec.Executor(cfg, protocol, ns, name, url.Values{"command": command,
		"stdin": {fmt.Sprint(opts.Stdin != nil)}, "stdout": {"true"}, "stderr": {fmt.Sprint(!tty)}, "tty": {fmt.Sprint(tty)}})
	Expect(err).NotTo(HaveOccurred())
	return executor.StreamWithContext(ctx, opts)
}

var _ = Describe("the data plane: exec through the API server", Ordered, func() {
	var ns string

	BeforeAll(func() {
		ns = newNamespace("dataplane")
		apply(ns, "apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: box}\nspec: {image: dockside.dev/busybox:local}\n")
		apply(ns, "apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: frozen}\nspec: {image: dockside.dev/busybox:local, lifecycle: Paused}\n")
		waitFor(ns, "sandbox/box", "condition=Ready", 3*time.Minute)
		waitFor(ns, "sandbox/frozen", "jsonpath={.status.phase}=Paused", 3*time.Minute)
		dataPlaneServes(ns, "box")
		DeferCleanup(func() {
			deleteAndExpectGone(ns, "box")
			deleteAndExpectGone(ns, "frozen")
		})
	})

	It("streams a line to kubectl dockside exec before the command ends, takes stdin and exits with its code", func() {
		cmd := pluginCommand("exec", "-n", ns, "-i", "box", "--", "sh", "-c", "echo first; read line; echo got:$line; exit 3")
		stdin, err := cmd.StdinPipe()
		Expect(err).NotTo(HaveOccurred())
		lines, stderr := startLines(cmd)
		// The command waits for its input: "first" can only have come while it runs.
		Eventually(lines, time.Minute).Should(Receive(Equal("first")), "stderr: %s", stderr.String())
		_, err = io.WriteString(stdin, "hello\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(stdin.Close()).To(Succeed())
		Eventually(lines, time.Minute).Should(Receive(Equal("got:hello")))
		err = cmd.Wait()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "exit code 3, not %v; stderr: %s", err, stderr.String())
		Expect(exit.ExitCode()).To(Equal(3))
	})

	for _, protocol := range []string{"websocket", "spdy"} {
		It("gives a terminal of the client's size and the shell's exit code ("+protocol+")", func(ctx SpecContext) {
			in, feed := io.Pipe()
			DeferCleanup(feed.Close)
			out := &syncbuffer.Buffer{}
			done := make(chan error, 1)
			go func() {
				done <- clientExec(ctx, cp.Config, protocol, ns, "box", true, remotecommand.StreamOptions{
					Stdin: in, Stdout: out, Tty: true, TerminalSizeQueue: &oneSize{ctx: ctx},
				}, "sh")
			}()
			// The size is set a moment after the shell starts: a stty typed before it reports none, so ask again.
			Eventually(func() string {
				_, _ = io.WriteString(feed, "stty size\n")
				return out.String()
			}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(ContainSubstring("45 123"))
			_, err := io.WriteString(feed, "exit 7\n")
			Expect(err).NotTo(HaveOccurred())
			Eventually(done, time.Minute).Should(Receive(&err))
			var exit utilexec.CodeExitError
			Expect(errors.As(err, &exit)).To(BeTrue(), "exit code 7, not %v", err)
			Expect(exit.Code).To(Equal(7))
		})
	}

	It("ends what the command left running in the background", func() {
		res := dockside("exec", "", "-n", ns, "box", "--", "sh", "-c", "sleep 3600 & echo started")
		Expect(res.code).To(BeZero(), res.stderr)
		Expect(res.stdout).To(Equal("started\n"))
		top, err := docker("top", onlyContainer(ns, "box", "primary"), "-o", "pid,args")
		Expect(err).NotTo(HaveOccurred())
		Expect(top).NotTo(ContainSubstring("sleep 3600"))
	})

	It("refuses a user without the role and a Paused Sandbox, with messages", func(ctx SpecContext) {
		eve, err := cp.AddUser("eve")
		Expect(err).NotTo(HaveOccurred())
		err = clientExec(ctx, eve, "websocket", ns, "box", false, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}, "true")
		Expect(err).To(MatchError(ContainSubstring(`User "eve" cannot get resource "sandboxes/exec" in API group "subresources.dockside.dev" in the namespace "%s"`, ns)))
		res := dockside("exec", "", "-n", ns, "frozen", "--", "true")
		Expect(res.code).To(Equal(125))
		Expect(res.stderr).To(ContainSubstring(`Sandbox "frozen" is Paused: resume it first (kubectl dockside resume frozen)`))
	})

	It("forwards a local port to a port of the Sandbox's service (kubectl dockside port-forward)", func() {
		web, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "dockside_v1alpha1_sandboxservice_web.yaml"))
		Expect(err).NotTo(HaveOccurred())
		apply(ns, string(web))
		apply(ns, "apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: served}\nspec: {image: dockside.dev/busybox:local, services: [web]}\n")
		DeferCleanup(func() { deleteAndExpectGone(ns, "served") })
		waitFor(ns, "sandbox/served", "condition=Ready", 3*time.Minute)
		local := freePort()
		cmd := pluginCommand("port-forward", "-n", ns, "served", "web:8080", fmt.Sprint(local))
		out := &syncbuffer.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		Expect(cmd.Start()).To(Succeed())
		Eventually(out.String, time.Minute).Should(ContainSubstring(fmt.Sprintf("Forwarding from 127.0.0.1:%d -> 8080", local)))
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
		Expect(err).NotTo(HaveOccurred(), out.String())
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(Equal("ok\n"), "the web service's page, through the API server and the agent")
		Expect(cmd.Process.Signal(os.Interrupt)).To(Succeed())
		Expect(cmd.Wait()).To(Succeed(), out.String())

		res := dockside("port-forward", "", "-n", ns, "served", "db:6379", fmt.Sprint(freePort()))
		Expect(res.code).To(Equal(1))
		Expect(res.stderr).To(ContainSubstring(`Sandbox "served" runs no SandboxService "db" (spec.services: [web])`))
	})

	It("serves the Python client's stream module unchanged", func() {
		out, err := exec.Command(python(), filepath.Join("testdata", "sandbox_exec.py"), cp.Kubeconfig, ns, "box",
			"sh", "-c", "echo py-out; echo py-err >&2; exit 5").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		var got struct {
			Stdout, Stderr string
			ExitCode       int `json:"exitCode"`
		}
		Expect(json.Unmarshal(out, &got)).To(Succeed(), string(out))
		Expect(got.Stdout).To(Equal("py-out\n"))
		Expect(got.Stderr).To(Equal("py-err\n"))
		Expect(got.ExitCode).To(Equal(5))
	})
})

// Two nodes: the API server reaches the suite's agent (the APIService's Service), which forwards a call for a
// Sandbox of another node to that node's agent, at the address it publishes on its Lease.
var _ = Describe("the data plane across two nodes", Label("fleet"), func() {
	It("serves exec into a Sandbox of a node whose agent the API server does not reach, through the suite's agent", func() {
		far := fleetNode{name: node + "-dpb", daemon: startDockerd("dpb")}
		address := fmt.Sprintf("127.0.0.1:%d", freePort())
		peerDir, err := dataplane.PeerCertDir(far.name)
		Expect(err).NotTo(HaveOccurred())
		startOwnAgent(far.daemon, far.name, "10.218.0.0/24", "--dataplane-bind-address="+address,
			"--dataplane-cert-dir="+dataplane.AgentCertDir(), "--dataplane-peer-cert-dir="+peerDir, "--dataplane-advertise-address="+address)
		ns := newNamespace("dpfar")
		DeferCleanup(releaseSandboxes, ns)
		// The suite's kubeconfig is a cluster administrator (system:masters), which no agent passes to another
		// (decision 0030): its user name is bound in the namespace, as docs/deploy.md tells administrators to.
		_, err = kubectl("create", "rolebinding", "admin-exec", "-n", ns, "--clusterrole=cluster-admin", "--user=dockside-admin")
		Expect(err).NotTo(HaveOccurred())
		apply(ns, fleetSandbox("far", far.name))
		waitFor(ns, "sandbox/far", "condition=Ready", 3*time.Minute)
		dataPlaneServes(ns, "far")

		res := dockside("exec", "", "-n", ns, "far", "--", "sh", "-c", "echo written-through-a > /workspace/mark; echo done")
		Expect(res.code).To(BeZero(), res.stderr)
		Expect(res.stdout).To(Equal("done\n"))
		primary := field(ns, "sandbox/far", "{.status.containerID}")
		Expect(far.daemon.docker("exec", primary, "cat", "/workspace/mark")).To(Equal("written-through-a"),
			"the command ran on the far node's daemon")
		res = dockside("exec", "", "-n", ns, "far", "--", "sh", "-c", "exit 4")
		Expect(res.code).To(Equal(4), "the exit code comes back through both agents: %s", res.stderr)
		deleteAndExpectGone(ns, "far")
	})
})

// dataPlaneServes waits until the aggregator serves exec into the Sandbox: after another spec restarts the
// suite's agent, kube-apiserver answers "service unavailable" for a while (its APIService's Available
// condition can still say True then). Any other outcome is left to the spec's own assertions.
func dataPlaneServes(ns, sandbox string) {
	GinkgoHelper()
	Eventually(func() string {
		return dockside("exec", "", "-n", ns, sandbox, "--", "true").stderr
	}, 2*time.Minute, time.Second).ShouldNot(ContainSubstring("service unavailable"))
}
