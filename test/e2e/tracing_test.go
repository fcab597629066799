//go:build e2e

package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/dockside-dev/dockside/internal/tracing"
)

// The agent's traces as a collector receives them (docs/tracing.md): the span tree of one start, one Execution
// and one deletion, and nothing sensitive in any span the suite's agents sent.
var _ = Describe("traces sent to an OTLP collector", func() {
	It("has one tree per start, Execution and deletion, and no image, command, env, stdin, output, Secret or user in any span", func() {
		ns := newNamespace("tracing")
		tok := fmt.Sprintf("%x", time.Now().UnixNano()) // makes each seeded value one no other text holds
		image := "dockside.dev/busybox:local"
		secretName, secretValue := "tok-secret-"+tok, "tok-secretvalue-"+tok
		forbidden := []string{image, secretName, secretValue,
			"tok-env-" + tok,                                                                                   // the Sandbox's env
			"tok-exec-" + tok, "tok-arg-" + tok, "tok-execenv-" + tok, "tok-stdin-" + tok, "tok-out-42-" + tok, // the Execution's
			"tok-user-" + tok, "tok-dpcmd-" + tok, // the data plane's caller and command
		}
		_, err := kubectl("create", "secret", "generic", "-n", ns, secretName, "--from-literal=k="+secretValue)
		Expect(err).NotTo(HaveOccurred())

		apply(ns, fmt.Sprintf(`apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata: {name: traced}
spec:
  image: %s
  env:
  - {name: PLAIN, value: tok-env-%s}
  - name: FROM_SECRET
    valueFrom: {secretKeyRef: {name: %s, key: k}}
`, image, tok, secretName))
		waitFor(ns, "sandbox/traced", "condition=Ready", 90*time.Second)
		sandboxUID := field(ns, "sandbox/traced", "{.metadata.uid}")

		start := awaitTrace(tracing.Root("sandbox-start", sandboxUID, 1), "sandbox.start")
		Expect(start.paths()).To(HaveEach(HaveSuffix("sandbox.start")), "every span of the start reaches its root")
		Expect(start.paths()).To(ContainElements(
			"sandbox.bind < sandbox.pass < sandbox.start",
			"sandbox.ensureImages < sandbox.pass < sandbox.start",
			"docker.StartContainer < sandbox.ensurePrimary < sandbox.pass < sandbox.start",
		))
		root := start.named("sandbox.start")[0]
		Expect(attr(root, "k8s.namespace.name")).To(Equal(ns))
		Expect(attr(root, "dockside.sandbox.name")).To(Equal("traced"))
		Expect(attr(root, "dockside.phase")).To(Equal("Running"))

		apply(ns, fmt.Sprintf(`apiVersion: dockside.dev/v1alpha1
kind: Execution
metadata: {name: run}
spec:
  sandboxName: traced
  command: [sh, -c, "cat; echo tok-out-$((6*7))-%s # tok-exec-%s", tok-arg-%s]
  stdin: tok-stdin-%s
  env:
  - {name: E, value: tok-execenv-%s}
`, tok, tok, tok, tok, tok))
		executionUID := field(ns, "execution/run", "{.metadata.uid}")
		waitFor(ns, "execution/run", "jsonpath={.status.phase}=Succeeded", time.Minute)
		Expect(field(ns, "execution/run", "{.status.stdout}")).To(ContainSubstring("tok-out-42-"+tok), "the output the spans must not carry")

		run := awaitTrace(tracing.Root("execution", executionUID, 0), "execution")
		Expect(run.paths()).To(ContainElements(
			"execution.queue < execution", "execution.run < execution", "execution.outcome < execution"))
		Expect(run.paths()).To(ContainElement(MatchRegexp(`^docker\.\w+ < (.+ < )?execution\.run < execution$`)), "the run's Docker calls")
		Expect(run.paths()).To(HaveEach(HaveSuffix("execution")))
		Expect(attr(run.named("execution.run")[0], "dockside.exit_code")).To(Equal("0"))
		Expect(attr(run.named("execution")[0], "dockside.phase")).To(Equal("Succeeded"))

		// An exec through the data plane, as a user whose name must not be in its span, with a traceparent that
		// kube-apiserver passes on to the agent.
		user, err := cp.AddUser("tok-user-"+tok, "system:masters")
		Expect(err).NotTo(HaveOccurred())
		caller := tracing.CallerParent(func(string) string { return "" })
		user.Wrap(func(rt http.RoundTripper) http.RoundTripper { return tracing.Propagating(rt, caller) })
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		Expect(clientExec(ctx, user, "websocket", ns, "traced", false,
			remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}, "echo", "tok-dpcmd-"+tok)).To(Succeed())
		callerID := caller.TraceID()
		Eventually(func() []string { return newSpanTree(traces.trace(callerID[:])).paths() }).
			WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(ContainElement("dataplane.exec < ?"), "the caller's span, not sent, is its parent")
		dp := newSpanTree(traces.trace(callerID[:])).named("dataplane.exec")[0]
		Expect(hex.EncodeToString(dp.ParentSpanId)).To(Equal(caller.SpanID().String()))

		deleteAndExpectGone(ns, "traced")
		deletion := awaitTrace(tracing.Root("sandbox-deletion", sandboxUID, 0), "sandbox.deletion")
		Expect(deletion.paths()).To(ContainElement("docker.RemoveContainer < sandbox.pass < sandbox.deletion"))
		Expect(deletion.paths()).To(HaveEach(HaveSuffix("sandbox.deletion")))

		Expect(traces.leaks(forbidden)).To(BeEmpty(), "values no span may carry, in what %d spans carried", traces.spanCount())
	})
})

// awaitTrace waits until the root span of a piece of work has arrived (it is recorded last, once the work is
// over, docs/design/tracing.md) and returns the trace's spans; by then every span ended before it has arrived
// too, as the agent exports spans in the order they end. The root, and every other span of the trace, must
// arrive once: a pass after the work recording the root again would send it within a few of the agent's
// 200 ms export periods, which the wait below spans many times over.
func awaitTrace(root trace.SpanContext, name string) spanTree {
	GinkgoHelper()
	id := root.TraceID()
	arrivals := func() []string {
		var names []string
		for _, s := range traces.trace(id[:]) {
			if hex.EncodeToString(s.SpanId) == root.SpanID().String() {
				names = append(names, s.Name)
			}
		}
		return names
	}
	Eventually(arrivals).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).ShouldNot(BeEmpty(), "the root span %s", name)
	Consistently(arrivals).WithTimeout(5*time.Second).WithPolling(200*time.Millisecond).Should(Equal([]string{name}), "the root span %s, once", name)
	seen := map[string]int{}
	for _, s := range traces.trace(id[:]) {
		seen[s.Name+" "+hex.EncodeToString(s.SpanId)]++
	}
	for span, n := range seen {
		Expect(n).To(Equal(1), "span %s arrived %d times", span, n)
	}
	return newSpanTree(traces.trace(id[:]))
}
