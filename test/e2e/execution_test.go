//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Execution on real Docker, through the kubectl plugin", func() {
	It("runs Python fed on stdin and returns its output and exit code", func() {
		ns := newNamespace("exec-py")
		session(ns, "py", "dockside.dev/python:local")

		out := plugin("print(6 * 7)\n", "-n", ns, "-i", "py", "--", "python3", "-")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(Equal("42\n"))

		out = plugin("", "-n", ns, "py", "--", "python3", "-c", "import sys; print('oops', file=sys.stderr); sys.exit(3)")
		Expect(out.code).To(Equal(3))
		Expect(out.stderr).To(Equal("oops\n"))
		Expect(kubectl("get", "-n", ns, "executions", "-o", "name")).To(BeEmpty(), "the plugin deletes what it created")
		Expect(field(ns, "sandbox/py", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))
	})

	It("holds a 5 s deadline against a command that stops its own parent, keeping nothing printed after it", func() {
		ns := newNamespace("exec-stop")
		session(ns, "box", "dockside.dev/busybox:local")
		// The deadline leaves a busy machine time to start the command and print "early"; "late" would come
		// 30 s in, long after the deadline, had the kill not ended everything.
		out := plugin("", "-n", ns, "--timeout", "5s", "--keep", "box", "--",
			"sh", "-c", `echo early; sh -c 'kill -STOP $PPID; sleep 30; echo late' & wait`)
		Expect(out.code).To(Equal(124), out.stderr)
		Expect(out.stdout).To(Equal("early\n"), "nothing printed after the deadline is kept")

		name := onlyExecution(ns)
		Expect(field(ns, name, "{.status.reason}")).To(Equal("DeadlineExceeded"))
		Expect(statusDuration(ns, name)).To(And(BeNumerically(">=", 5*time.Second), BeNumerically("<", 15*time.Second)),
			"from Running to the kill: the deadline, and no more than a pass on a busy machine")
		waitFor(ns, "sandbox/box", `jsonpath={.status.conditions[?(@.type=="TopologyPoisoned")].reason}=DeadlineExceeded`, time.Minute)
		expectStopped(onlyContainer(ns, "box", "primary"))
		Expect(docker("inspect", "-f", "{{.State.Running}}", heldWorkspace(ns, "box"))).To(Equal("true"), "the workspace is kept")
	})

	It("cuts output past the cap: 128 KiB written, 64 KiB kept and the rest counted", func() {
		ns := newNamespace("exec-cap")
		session(ns, "box", "dockside.dev/busybox:local")
		out := plugin("", "-n", ns, "--max-output-bytes", "65536", "box", "--", "sh", "-c", "head -c 131072 /dev/zero | tr '\\0' x")
		Expect(out.code).To(Equal(0), "the command's own exit code")
		Expect(out.stdout).To(Equal(strings.Repeat("x", 65536)))
		Expect(out.stderr).To(ContainSubstring("65536 bytes of stdout"))
		Expect(field(ns, "sandbox/box", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))
	})

	It("never runs a queued Execution deleted before its turn", func() {
		ns := newNamespace("exec-queue")
		session(ns, "box", "dockside.dev/busybox:local")
		// The first runs until the spec lets it end, so that the second is queued behind it however slow
		// the machine.
		apply(ns, execution("first", "box", `until [ -e /workspace/go ]; do sleep 1; done`))
		waitFor(ns, "execution/first", "jsonpath={.status.phase}=Running", time.Minute)
		apply(ns, execution("second", "box", `touch /workspace/marker`))
		waitFor(ns, "execution/second", "jsonpath={.status.phase}=Queued", time.Minute)
		_, err := kubectl("delete", "-n", ns, "execution", "second")
		Expect(err).NotTo(HaveOccurred())
		_, err = docker("exec", onlyContainer(ns, "box", "primary"), "touch", "/workspace/go")
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "execution/first", "jsonpath={.status.phase}=Succeeded", time.Minute)

		out := plugin("", "-n", ns, "box", "--", "ls", "-a", "/workspace")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).NotTo(ContainSubstring("marker"))
	})

	// How fast the kill follows the delete is a figure of make bench (BenchmarkExecutionCancel); here the
	// container must stop while the command still had most of its hour to run.
	It("kills the container when a running Execution is deleted", func() {
		ns := newNamespace("exec-cancel")
		session(ns, "box", "dockside.dev/busybox:local")
		apply(ns, execution("long", "box", `sleep 3600`))
		waitFor(ns, "execution/long", "jsonpath={.status.phase}=Running", time.Minute)
		primary := onlyContainer(ns, "box", "primary")
		// Running is written before the command starts; a delete before the start runs nothing and so
		// kills nothing. The command runs once the container shows it.
		Eventually(func() (string, error) { return docker("top", primary, "-o", "pid,args") }).WithTimeout(time.Minute).
			Should(ContainSubstring("sleep 3600"), "the command runs")

		start := time.Now()
		_, err := kubectl("delete", "-n", ns, "execution", "long", "--wait=false")
		Expect(err).NotTo(HaveOccurred())
		expectStopped(primary)
		AddReportEntry("Execution cancel", fmt.Sprintf("container stopped %v after the delete", time.Since(start).Round(time.Millisecond)))
		waitFor(ns, "sandbox/box", `jsonpath={.status.conditions[?(@.type=="TopologyPoisoned")].reason}=Canceled`, time.Minute)
	})

	It("leaves no process it started: a detached child's later write never happens, an earlier file stays", func() {
		ns := newNamespace("exec-detach")
		session(ns, "box", "dockside.dev/busybox:local")
		out := plugin("", "-n", ns, "box", "--", "sh", "-c",
			// Detached: its output goes elsewhere, so the exec's streams close when the shell exits. It writes
			// 10 s after it was started, which leaves a busy machine time to kill it first.
			`echo kept > /workspace/early; (sleep 10; echo never > /workspace/late) >/dev/null 2>&1 </dev/null & echo started`)
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(Equal("started\n"))
		Expect(out.stderr).To(ContainSubstring("processes running"))
		waitFor(ns, "sandbox/box", `jsonpath={.status.conditions[?(@.type=="TopologyPoisoned")].reason}=LeftoverProcesses`, time.Minute)
		// Once the container has stopped, nothing of it can write any more: the workspace is as the kill left it.
		expectStopped(onlyContainer(ns, "box", "primary"))
		holder := heldWorkspace(ns, "box")
		Expect(workspaceFile(holder, "early")).To(Equal("kept\n"))
		_, err := docker("cp", holder+":/workspace/late", "-")
		Expect(err).To(MatchError(ContainSubstring("Could not find")))
	})

	It("feeds nothing to the session's PID 1: a command written to /proc/1/fd/0 never runs, and the next Execution is not blamed", func() {
		ns := newNamespace("exec-pid1")
		session(ns, "box", "dockside.dev/busybox:local")
		// Were PID 1's input a pipe, its shell would run this line after the Execution ended, writing to the
		// workspace for ever, and the next Execution would find the survivor and be blamed for it.
		out := plugin("", "-n", ns, "box", "--", "sh", "-c",
			`echo 'while true; do date >> /workspace/planted; sleep 1; done' > /proc/1/fd/0 && echo written`)
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).To(Equal("written\n"))

		out = plugin("", "-n", ns, "box", "--", "sh", "-c", "sleep 3; ls /workspace")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(out.stdout).NotTo(ContainSubstring("planted"))
		Expect(field(ns, "sandbox/box", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))
		Expect(field(ns, "sandbox/box", `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)).To(Equal("False"))
	})
})

// expectStopped waits until Docker says a container that was killed no longer runs.
func expectStopped(container string) {
	GinkgoHelper()
	Eventually(func() (string, error) { return docker("inspect", "-f", "{{.State.Running}}", container) }).
		WithTimeout(time.Minute).WithPolling(100*time.Millisecond).Should(Equal("false"), "container %s still runs", container)
}

// session applies a session Sandbox of image and waits until it is Ready.
func session(ns, name, image string) {
	GinkgoHelper()
	apply(ns, fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata:\n  name: %s\nspec:\n  image: %s\n", name, image))
	waitFor(ns, "sandbox/"+name, "condition=Ready", 90*time.Second)
}

// execution is the manifest of an Execution running script with sh in sandbox.
func execution(name, sandbox, script string) string {
	return fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Execution\nmetadata:\n  name: %s\nspec:\n  sandboxName: %s\n  command: [sh, -c, %q]\n", name, sandbox, script)
}

// onlyExecution names the one Execution of a namespace, as kubectl prints it (execution.dockside.dev/NAME).
func onlyExecution(ns string) string {
	GinkgoHelper()
	out, err := kubectl("get", "-n", ns, "executions", "-o", "name")
	Expect(err).NotTo(HaveOccurred())
	names := strings.Fields(out)
	Expect(names).To(HaveLen(1))
	return names[0]
}

// statusDuration is how long an Execution took, from its status times.
func statusDuration(ns, name string) time.Duration {
	GinkgoHelper()
	start, err := time.Parse(time.RFC3339Nano, field(ns, name, "{.status.startTime}"))
	Expect(err).NotTo(HaveOccurred())
	finish, err := time.Parse(time.RFC3339Nano, field(ns, name, "{.status.finishTime}"))
	Expect(err).NotTo(HaveOccurred())
	return finish.Sub(start)
}

// workspaceFile reads a file of a workspace through its holder container (which has no shell: docker cp
// streams a tar archive, whose one member's content follows a 512-byte header).
func workspaceFile(holder, name string) string {
	GinkgoHelper()
	tar, err := exec.Command("docker", "cp", holder+":/workspace/"+name, "-").Output()
	Expect(err).NotTo(HaveOccurred())
	Expect(len(tar)).To(BeNumerically(">", 512))
	return string(bytes.TrimRight(tar[512:], "\x00"))
}

type pluginResult struct {
	stdout, stderr string
	code           int
}

// plugin runs `kubectl dockside run ARGS...` (a command through an Execution) the way a user does.
func plugin(stdin string, args ...string) pluginResult {
	GinkgoHelper()
	return dockside("run", stdin, args...)
}

// dockside runs `kubectl dockside VERB ARGS...` the way a user does: kubectl finds kubectl-dockside on the PATH.
func dockside(verb, stdin string, args ...string) pluginResult {
	GinkgoHelper()
	cmd := pluginCommand(append([]string{verb}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		Fail(fmt.Sprintf("kubectl dockside %s %v: %v", verb, args, err))
	}
	return pluginResult{stdout: out.String(), stderr: errOut.String(), code: cmd.ProcessState.ExitCode()}
}
