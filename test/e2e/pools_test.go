//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

var _ = Describe("warm pools and claims on real Docker", func() {
	It("fills a pool, binds a claim to a warm Sandbox whose commands get the claim's env, falls back cold, and leaves nothing", func() {
		ns := newNamespace("pools")
		apply(ns, poolManifests)
		waitFor(ns, "sandboxwarmpool/shell", "condition=Ready", 3*time.Minute)
		Expect(kubectl("get", "-n", ns, "sandboxwarmpools")).To(MatchRegexp(
			`^NAME\s+TEMPLATE\s+DESIRED\s+SCOPE\s+READY\s+AVAILABLE\s+AGE\nshell\s+shell\s+2\s+Cluster\s+2\s+2\s+\S+\n$`), "kubectl get's columns")
		members := poolMembers(ns, "shell")
		Expect(members).To(HaveLen(2))
		for _, m := range members {
			Expect(onlyContainer(ns, m, dsv1alpha1.RolePrimary)).NotTo(BeEmpty(), "warm Sandbox %s runs in Docker", m)
		}
		warm, cold := claimsCounted(dsv1alpha1.ClaimWarm), claimsCounted(dsv1alpha1.ClaimCold)

		apply(ns, claimManifest("task", "shell"))
		waitFor(ns, "sandboxclaim/task", "condition=Ready", time.Minute)
		Expect(field(ns, "sandboxclaim/task", "{.status.start}")).To(Equal("Warm"))
		sbx := field(ns, "sandboxclaim/task", "{.status.sandboxName}")
		Expect(members).To(ContainElement(sbx), "the claim took a warm Sandbox of the pool")
		Expect(field(ns, "sandbox/"+sbx, "{.metadata.labels.team}")).To(Equal("data"))
		Expect(kubectl("get", "-n", ns, "sandboxclaims")).To(MatchRegexp(
			`^NAME\s+POOL\s+SANDBOX\s+START\s+READY\s+REASON\s+AGE\ntask\s+shell\s+` + sbx + `\s+Warm\s+True\s+Claimed\s+\S+\n$`))
		Expect(claimsCounted(dsv1alpha1.ClaimWarm)).To(Equal(warm + 1))

		// kstatus (Flux, kubectl wait) and Argo CD's health read the claim and the template right (the pool,
		// refilling now, once it is full again).
		for _, object := range []string{"sandboxtemplate/shell", "sandboxclaim/task"} {
			Expect(kstatusOf(ns, object)).To(Equal(kstatus.CurrentStatus), object)
		}
		scripts := installArgoHealthChecks()
		expectHealth(scripts, ns, "sandboxclaim/task", "Healthy", dsv1alpha1.ReasonClaimed)

		// The claim's env reaches every command, through an Execution and through exec; not the primary's
		// own process, started before the claim.
		apply(ns, execution("env", sbx, "echo task=$TASK_ID"))
		waitFor(ns, "execution/env", "jsonpath={.status.phase}=Succeeded", time.Minute)
		Expect(field(ns, "execution/env", "{.status.stdout}")).To(Equal("task=42\n"))
		res := dockside("exec", "", "-n", ns, sbx, "--", "sh", "-c", "echo task=$TASK_ID")
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(res.stdout).To(Equal("task=42\n"))
		Expect(docker("inspect", "-f", "{{.Config.Env}}", onlyContainer(ns, sbx, dsv1alpha1.RolePrimary))).NotTo(ContainSubstring("TASK_ID"))

		// The pool starts another in place of the one claimed.
		waitFor(ns, "sandboxwarmpool/shell", "jsonpath={.status.availableReplicas}=2", 3*time.Minute)
		Expect(poolMembers(ns, "shell")).To(HaveLen(3), "two warm and the claimed one")
		waitFor(ns, "sandboxwarmpool/shell", "condition=Ready", time.Minute)
		expectHealth(scripts, ns, "sandboxwarmpool/shell", "Healthy", dsv1alpha1.ReasonFilled)
		Expect(kstatusOf(ns, "sandboxwarmpool/shell")).To(Equal(kstatus.CurrentStatus))

		// An empty pool of the same template: the claim gets a Sandbox started for it.
		apply(ns, emptyPoolManifest+"---\n"+claimManifest("late", "empty"))
		waitFor(ns, "sandboxclaim/late", "condition=Ready", 3*time.Minute)
		Expect(field(ns, "sandboxclaim/late", "{.status.start}")).To(Equal("Cold"))
		Expect(field(ns, "sandboxclaim/late", "{.status.sandboxName}")).To(Equal("late"))
		Expect(claimsCounted(dsv1alpha1.ClaimCold)).To(Equal(cold + 1))
		apply(ns, execution("late-env", "late", "echo task=$TASK_ID"))
		waitFor(ns, "execution/late-env", "jsonpath={.status.phase}=Succeeded", time.Minute)
		Expect(field(ns, "execution/late-env", "{.status.stdout}")).To(Equal("task=42\n"))

		// The plugin claims as a user does, and waits for the claim with a watch.
		res = dockside("claim", "", "-n", ns, "shell", "plugged", "--env", "TASK_ID=7")
		Expect(res.code).To(Equal(0), res.stderr)
		Expect(res.stdout).To(MatchRegexp(`^claim: plugged\nsandbox: (shell-\d+)\nstart: Warm\n$`))
		plugged := field(ns, "sandboxclaim/plugged", "{.status.sandboxName}")
		res = dockside("exec", "", "-n", ns, plugged, "--", "sh", "-c", "echo task=$TASK_ID")
		Expect(res.stdout).To(Equal("task=7\n"), res.stderr)

		// Deleting the pool deletes its warm Sandboxes; the claimed ones stay with their claims.
		_, err := kubectl("delete", "-n", ns, "sandboxwarmpool/shell", "sandboxwarmpool/empty")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() []string { return poolMembers(ns, "shell") }, 2*time.Minute, time.Second).Should(ConsistOf(sbx, plugged))
		Expect(field(ns, "sandboxclaim/task", `{.status.conditions[?(@.type=="Ready")].status}`)).To(Equal("True"))

		// Deleting the claims deletes their Sandboxes; then Docker holds nothing of the namespace.
		_, err = kubectl("delete", "-n", ns, "sandboxclaims", "--all")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() string { return field(ns, "sandboxes", "{.items[*].metadata.name}") }, 2*time.Minute, time.Second).Should(BeEmpty())
		Expect(containers(ns, "", "")).To(BeEmpty())
		for _, kind := range []string{"network", "volume"} {
			Expect(docker(kind, "ls", "-q", "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns)).To(BeEmpty(), "%ss left", kind)
		}
		_, err = kubectl("delete", "-n", ns, "sandboxtemplate/shell")
		Expect(err).NotTo(HaveOccurred())
	})
})

// shellTemplateManifest is a template of a busybox session.
const shellTemplateManifest = `apiVersion: dockside.dev/v1alpha1
kind: SandboxTemplate
metadata:
  name: shell
spec:
  sandbox:
    image: dockside.dev/busybox:local
    activeDeadlineSeconds: 600
`

// poolManifests is the shell template and a pool of two of it.
const poolManifests = shellTemplateManifest + `---
apiVersion: dockside.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: shell
spec:
  templateRef: {name: shell}
  replicas: 2
`

// emptyPoolManifest is a pool of the same template that keeps none warm.
const emptyPoolManifest = `apiVersion: dockside.dev/v1alpha1
kind: SandboxWarmPool
metadata:
  name: empty
spec:
  templateRef: {name: shell}
  replicas: 0
`

// claimManifest is a claim of pool with env TASK_ID=42 and label team=data.
func claimManifest(name, pool string) string {
	return fmt.Sprintf(`apiVersion: dockside.dev/v1alpha1
kind: SandboxClaim
metadata:
  name: %s
spec:
  poolRef: {name: %s}
  env: [{name: TASK_ID, value: "42"}]
  labels: {team: data}
`, name, pool)
}

// kstatusOf is what kstatus, as Flux and kubectl's waiters use it, reads of an object as the API server serves it.
func kstatusOf(ns, object string) kstatus.Status {
	GinkgoHelper()
	out, err := kubectl("get", "-n", ns, object, "-o", "json")
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{}
	Expect(u.UnmarshalJSON([]byte(out))).To(Succeed())
	res, err := kstatus.Compute(u)
	Expect(err).NotTo(HaveOccurred())
	return res.Status
}

// poolMembers names the Sandboxes that carry the pool's label, claimed ones included.
func poolMembers(ns, pool string) []string {
	GinkgoHelper()
	out, err := kubectl("get", "-n", ns, "sandboxes", "-l", dsv1alpha1.LabelPool+"="+pool, "-o", "jsonpath={.items[*].metadata.name}")
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(out)
}

// claimsCounted reads dockside_sandbox_claims_total{start} from the suite agent's metrics.
func claimsCounted(start dsv1alpha1.ClaimStart) float64 {
	GinkgoHelper()
	resp, err := http.Get(agentMetrics)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	series := fmt.Sprintf(`dockside_sandbox_claims_total{start="%s"} `, start)
	scan := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	scan.Buffer(nil, 1<<20)
	for scan.Scan() {
		if v, ok := strings.CutPrefix(scan.Text(), series); ok {
			n, err := strconv.ParseFloat(v, 64)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
	}
	Expect(scan.Err()).NotTo(HaveOccurred())
	Fail("the agent's metrics have no series " + series)
	return 0
}
