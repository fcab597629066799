//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// webService passes readiness as soon as httpd answers; it has a minute for that, which a busy machine needs
// at most a fraction of.
const webService = `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata:
  name: web
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "echo ok > /tmp/index.html && exec httpd -f -p 8080 -h /tmp"]
  readiness:
    command: ["wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/"]
    periodSeconds: 1
    failureThreshold: 60
`

var _ = Describe("Sandbox on real Docker", func() {
	It("brings a session with one service up, Ready, and removes all of it on delete", func() {
		ns := newNamespace("session")
		apply(ns, webService)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: box
spec:
  image: dockside.dev/busybox:local
  services: ["web"]
`)
		waitFor(ns, "sandbox/box", "condition=Ready", 90*time.Second)
		Expect(field(ns, "sandbox/box", "{.status.phase}")).To(Equal("Running"))
		Expect(field(ns, "sandbox/box", `{.status.conditions[?(@.type=="ServicesReady")].status}`)).To(Equal("True"))

		primary := onlyContainer(ns, "box", "primary")
		Expect(docker("inspect", "-f", "{{.State.Running}}", primary)).To(Equal("true"))
		By("reaching the service by name over the topology network, from the primary")
		Expect(docker("exec", primary, "wget", "-q", "-O", "-", "http://web:8080/")).To(Equal("ok"))

		deleteAndExpectGone(ns, "box")
	})

	It("runs a command to Succeeded with its output in status", func() {
		ns := newNamespace("run")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: hello
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "echo hello from dockside; exit 0"]
`)
		waitFor(ns, "sandbox/hello", "jsonpath={.status.phase}=Succeeded", 90*time.Second)
		Expect(field(ns, "sandbox/hello", "{.status.result.exitCode}")).To(Equal("0"))
		Expect(field(ns, "sandbox/hello", "{.status.result.reason}")).To(Equal("Completed"))
		Expect(field(ns, "sandbox/hello", "{.status.result.outputTail}")).To(ContainSubstring("hello from dockside"))
		deleteAndExpectGone(ns, "hello")
	})

	It("ends a run that outlives activeDeadlineSeconds as DeadlineExceeded, killed from the host", func() {
		ns := newNamespace("deadline")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: sleepy
spec:
  image: dockside.dev/busybox:local
  command: ["sleep", "600"]
  activeDeadlineSeconds: 2
`)
		waitFor(ns, "sandbox/sleepy", "jsonpath={.status.phase}=Failed", 60*time.Second)
		Expect(field(ns, "sandbox/sleepy", "{.status.result.reason}")).To(Equal("DeadlineExceeded"))
		Expect(docker("inspect", "-f", "{{.State.Running}}", onlyContainer(ns, "sleepy", "primary"))).To(Equal("false"))
		deleteAndExpectGone(ns, "sleepy")
	})

	It("poisons the topology when its service is killed, and never repairs it silently", func() {
		ns := newNamespace("poison")
		apply(ns, webService)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: victim
spec:
  image: dockside.dev/busybox:local
  services: ["web"]
`)
		waitFor(ns, "sandbox/victim", "condition=Ready", 90*time.Second)
		_, err := docker("kill", onlyContainer(ns, "victim", "service"))
		Expect(err).NotTo(HaveOccurred())

		waitFor(ns, "sandbox/victim", "condition=TopologyPoisoned", time.Minute)
		Expect(field(ns, "sandbox/victim", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("False"))
		Expect(field(ns, "sandbox/victim", `{.status.conditions[?(@.type=="TopologyPoisoned")].message}`)).To(ContainSubstring("web"))
		Expect(field(ns, "sandbox/victim", "{.status.phase}")).To(Equal("Failed"))
		Consistently(func() string {
			return field(ns, "sandbox/victim", `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)
		}, 5*time.Second, time.Second).Should(Equal("True"))
		deleteAndExpectGone(ns, "victim")
	})

	It("pauses and resumes a session by spec.lifecycle, keeping its processes", func() {
		ns := newNamespace("pause")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: sleeper
spec:
  image: dockside.dev/busybox:local
`)
		waitFor(ns, "sandbox/sleeper", "condition=Ready", 60*time.Second)
		primary := onlyContainer(ns, "sleeper", "primary")
		startedAt, err := docker("inspect", "-f", "{{.State.StartedAt}}", primary)
		Expect(err).NotTo(HaveOccurred())

		_, err = kubectl("patch", "-n", ns, "sandbox/sleeper", "--type=merge", "-p", `{"spec":{"lifecycle":"Paused"}}`)
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/sleeper", "condition=Paused", time.Minute)
		Expect(field(ns, "sandbox/sleeper", "{.status.phase}")).To(Equal("Paused"))
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("true"))

		_, err = kubectl("patch", "-n", ns, "sandbox/sleeper", "--type=merge", "-p", `{"spec":{"lifecycle":"Running"}}`)
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/sleeper", "condition=Paused=False", time.Minute)
		waitFor(ns, "sandbox/sleeper", "condition=Ready", time.Minute)
		Expect(docker("inspect", "-f", "{{.State.Paused}}", primary)).To(Equal("false"))
		By("thawing the same container, not a restarted one")
		Expect(docker("inspect", "-f", "{{.State.StartedAt}}", primary)).To(Equal(startedAt))
		deleteAndExpectGone(ns, "sleeper")
	})

	It("rolls the topology on a spec change and keeps the workspace", func() {
		ns := newNamespace("roll")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: roller
spec:
  image: dockside.dev/busybox:local
  resources:
    memory: 64Mi
`)
		waitFor(ns, "sandbox/roller", "condition=Ready", 60*time.Second)
		before := onlyContainer(ns, "roller", "primary")
		_, err := docker("exec", before, "sh", "-c", "echo kept > /workspace/note.txt")
		Expect(err).NotTo(HaveOccurred())

		_, err = kubectl("patch", "-n", ns, "sandbox/roller", "--type=merge", "-p", `{"spec":{"resources":{"memory":"96Mi"}}}`)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string { return containers(ns, "roller", "primary") }, 60*time.Second, time.Second).
			Should(And(HaveLen(1), Not(ContainElement(before))))
		waitFor(ns, "sandbox/roller", "condition=Ready", 60*time.Second)
		after := onlyContainer(ns, "roller", "primary")
		Expect(docker("inspect", "-f", "{{.HostConfig.Memory}}", after)).To(Equal("100663296"))
		Expect(docker("exec", after, "cat", "/workspace/note.txt")).To(Equal("kept"))
		deleteAndExpectGone(ns, "roller")
	})
})
