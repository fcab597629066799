//go:build e2e

package e2e

import (
	"encoding/json"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dockside-dev/dockside/test/argocdhealth"
)

// argoNamespace is where Argo CD and its argocd-cm live.
const argoNamespace = "argocd"

// installArgoHealthChecks merges config/argocd into argocd-cm the way docs/gitops.md says to, and returns the
// ConfigMap's data as the API server holds it: the scripts Argo CD would read.
func installArgoHealthChecks() map[string]string {
	GinkgoHelper()
	_, err := admin().RunWithInput("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+argoNamespace+"\n", "apply", "-f", "-")
	Expect(err).NotTo(HaveOccurred())
	_, err = kubectl("apply", "--server-side", "--field-manager=dockside", "-k", filepath.Join("..", "..", "config", "argocd"))
	Expect(err).NotTo(HaveOccurred())
	out, err := kubectl("get", "configmap", "argocd-cm", "-n", argoNamespace, "-o", "jsonpath={.data}")
	Expect(err).NotTo(HaveOccurred())
	var data map[string]string
	Expect(json.Unmarshal([]byte(out), &data)).To(Succeed())
	return data
}

// argoHealth fetches an object from the API server and runs on it the health check argocd-cm holds for its
// kind, as Argo CD does. The object is decoded as Argo CD's cache decodes it (whole numbers as int64).
func argoHealth(scripts map[string]string, ns, object string) argocdhealth.Health {
	GinkgoHelper()
	out, err := kubectl("get", "-n", ns, object, "-o", "json")
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	Expect(u.UnmarshalJSON([]byte(out))).To(Succeed())
	script := scripts[argocdhealth.Key(u.GroupVersionKind().Group, u.GetKind())]
	Expect(script).NotTo(BeEmpty(), "argocd-cm has no health check for %s", u.GroupVersionKind())
	health, err := argocdhealth.Evaluate(script, u.Object)
	Expect(err).NotTo(HaveOccurred())
	return health
}

// expectHealth checks the health Argo CD would show for object, with the reason and message of the condition
// it stands on as the message: Stalled for Degraded, Ready otherwise.
func expectHealth(scripts map[string]string, ns, object, status, reason string) {
	GinkgoHelper()
	on := "Ready"
	if status == "Degraded" {
		on = "Stalled"
	}
	message := field(ns, object, `{.status.conditions[?(@.type=="`+on+`")].message}`)
	want := argocdhealth.Health{Status: status, Message: reason}
	if message != "" {
		want.Message += ": " + message
	}
	Expect(argoHealth(scripts, ns, object)).To(Equal(want), "%s, whose %s condition says %s: %s", object, on, reason, message)
	GinkgoWriter.Printf("%s: Argo CD shows %s (%s: %s)\n", object, status, reason, message)
}

// patchLifecycle sets a Sandbox's spec.lifecycle.
func patchLifecycle(ns, object, lifecycle string) {
	GinkgoHelper()
	_, err := kubectl("patch", "-n", ns, object, "--type=merge", "-p", `{"spec":{"lifecycle":"`+lifecycle+`"}}`)
	Expect(err).NotTo(HaveOccurred())
}

// Every object comes from the real agent on real Docker; the only thing not real is Argo CD itself, whose
// interpreter (gopher-lua) and calling convention test/argocdhealth reproduces.
var _ = Describe("Argo CD health checks of config/argocd on what the agent writes", func() {
	It("reads Healthy, Progressing, Suspended and Degraded where each applies", func(ctx SpecContext) {
		scripts := installArgoHealthChecks()
		ns := newNamespace("argocd-health")
		DeferCleanup(func() {
			_, err := kubectl("delete", "-n", ns, "executions,checkpoints,sandboxes,sandboxservices", "--all", "--wait", "--timeout=120s")
			Expect(err).NotTo(HaveOccurred())
			Expect(labelled(ns)).To(BeEmpty(), "Docker objects of namespace %s left behind", ns)
		})
		apply(ns, webService)
		apply(ns, stubbornService)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: session
spec:
  image: dockside.dev/busybox:local
  services: ["web"]
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: frozen
spec:
  image: dockside.dev/busybox:local
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: absent
spec:
  image: dockside.dev/absent:local
  imagePullPolicy: Never
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: waiting
spec:
  image: dockside.dev/busybox:local
  services: ["stubborn"]
  startupDeadlineSeconds: 600
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: run-ok
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "echo done"]
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: run-fails
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "exit 3"]
`)

		By("a SandboxService the agent accepted")
		waitFor(ns, "sandboxservice/web", "condition=Ready", time.Minute)
		expectHealth(scripts, ns, "sandboxservice/web", "Healthy", "Accepted")

		By("a session up with its service")
		waitFor(ns, "sandbox/session", "condition=Ready", 2*time.Minute)
		expectHealth(scripts, ns, "sandbox/session", "Healthy", "Running")

		By("one-shot objects: a Checkpoint stored, an Execution that succeeded and one that failed")
		apply(ns, snapshotManifest("session")+`---
apiVersion: dockside.dev/v1alpha1
kind: Execution
metadata:
  name: ok
spec:
  sandboxName: session
  command: ["sh", "-c", "echo hi"]
  timeoutSeconds: 60
---
apiVersion: dockside.dev/v1alpha1
kind: Execution
metadata:
  name: fails
spec:
  sandboxName: session
  command: ["sh", "-c", "exit 3"]
  timeoutSeconds: 60
`)
		waitFor(ns, "checkpoint/snap", "condition=Ready", 2*time.Minute)
		expectHealth(scripts, ns, "checkpoint/snap", "Healthy", "Succeeded")
		waitFor(ns, "execution/ok", "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
		expectHealth(scripts, ns, "execution/ok", "Healthy", "Completed")
		waitFor(ns, "execution/fails", "jsonpath={.status.phase}=Failed", 2*time.Minute)
		expectHealth(scripts, ns, "execution/fails", "Degraded", "Error")

		By("finished runs: one that exited 0 and one that did not")
		waitFor(ns, "sandbox/run-ok", "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
		expectHealth(scripts, ns, "sandbox/run-ok", "Healthy", "Completed")
		waitFor(ns, "sandbox/run-fails", "jsonpath={.status.phase}=Failed", 2*time.Minute)
		expectHealth(scripts, ns, "sandbox/run-fails", "Degraded", "Error")

		By("a missing image with pull policy Never")
		waitFor(ns, "sandbox/absent", "jsonpath={.status.phase}=Failed", 2*time.Minute)
		expectHealth(scripts, ns, "sandbox/absent", "Degraded", "ImageNotPresent")

		By("a paused session, and an Execution queued behind it")
		waitFor(ns, "sandbox/frozen", "condition=Ready", 2*time.Minute)
		patchLifecycle(ns, "sandbox/frozen", "Paused")
		waitFor(ns, "sandbox/frozen", "condition=Paused", time.Minute)
		expectHealth(scripts, ns, "sandbox/frozen", "Suspended", "Paused")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Execution
metadata:
  name: queued
spec:
  sandboxName: frozen
  command: ["true"]
  timeoutSeconds: 60
`)
		waitFor(ns, "execution/queued", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}=SandboxPaused`, time.Minute)
		expectHealth(scripts, ns, "execution/queued", "Progressing", "SandboxPaused")
		patchLifecycle(ns, "sandbox/frozen", "Running")
		waitFor(ns, "execution/queued", "jsonpath={.status.phase}=Succeeded", 2*time.Minute)
		expectHealth(scripts, ns, "execution/queued", "Healthy", "Completed")

		By("a start converging on a service that is not ready, then failed at its startup deadline")
		waitFor(ns, "sandbox/waiting", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}=WaitingForServices`, 2*time.Minute)
		expectHealth(scripts, ns, "sandbox/waiting", "Progressing", "WaitingForServices")
		shortenStartupDeadline(ns, "sandbox/waiting")
		waitFor(ns, "sandbox/waiting", `jsonpath={.status.conditions[?(@.type=="Stalled")].reason}=ServiceNotReady`, startupFailWait)
		expectHealth(scripts, ns, "sandbox/waiting", "Degraded", "ServiceNotReady")

		By("a session whose topology is poisoned when its service is killed")
		_, err := docker("kill", onlyContainer(ns, "session", "service"))
		Expect(err).NotTo(HaveOccurred())
		waitFor(ns, "sandbox/session", "condition=Stalled", time.Minute)
		expectHealth(scripts, ns, "sandbox/session", "Degraded", "ServiceExited")
		Expect(field(ns, "sandbox/session", `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)).To(Equal("True"))
	}, SpecTimeout(15*time.Minute))
})
