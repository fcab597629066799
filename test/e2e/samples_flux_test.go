//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// samplesTimeout bounds the wait for every sample to be Current: generous, for a loaded 2-core machine.
const samplesTimeout = 5 * time.Minute

// poisonedTimeout is the wait's timeout for the folder holding a poisoned Sandbox; the wait must end, Failed,
// in less than half of it (poisonedBound). Both are generous: what is tested is that the wait ends on the
// Failed object instead of running into its timeout, not how fast the agent is.
const (
	poisonedTimeout = 10 * time.Minute
	poisonedBound   = poisonedTimeout / 2
)

// Flux applies a folder in one go (server-side, staged: cluster-wide kinds first) and then waits until kstatus
// reads every object Current, failing on the first one Failed. A fleet holding config/samples/ that way turns
// healthy only if no sample ever ends Failed, whatever order the agent sees them in.
var _ = Describe("config/samples/ applied the way Flux applies a folder", func() {
	It("ends with every object Current, then deletes without leaving anything in Docker", func(ctx SpecContext) {
		ns := newNamespace("samples")
		objects := readFolder(filepath.Join("..", "..", "config", "samples"), ns)
		rm := fluxResourceManager()
		changes := applyStaged(ctx, rm, objects)

		By("waiting until kstatus reads every object Current")
		err := rm.WaitForSetWithContext(ctx, changes.ToObjMetadataSet(), ssa.WaitOptions{
			Interval: 2 * time.Second, Timeout: samplesTimeout, FailFast: true,
		})
		if err != nil {
			out, _ := kubectl("get", "-n", ns, "sandboxes,executions,checkpoints,sandboxservices", "-o", "wide")
			Fail(fmt.Sprintf("the samples did not all become Current: %v\n%s", err, out))
		}
		Expect(field(ns, "execution/hello", "{.status.stdout}")).To(ContainSubstring("hello, Dockside, from"))

		pruneAll(ctx, rm, ns, objects)
	}, SpecTimeout(12*time.Minute))
})

// Without fail-fast, fluxcd/pkg/ssa's wait still returns as soon as every object is either Current or Failed,
// since a Failed one never turns Current: a Kustomization with a poisoned Sandbox turns not-Ready with the
// Sandbox named, long before its timeout.
var _ = Describe("A folder holding a poisoned Sandbox, applied and waited for the way Flux does", func() {
	It("ends Failed, naming the Sandbox, well before the wait's timeout", func(ctx SpecContext) {
		ns := newNamespace("flux-poisoned")
		objects := readFolder(filepath.Join("testdata", "flux-poisoned"), ns)
		rm := fluxResourceManager()
		start := time.Now()
		changes := applyStaged(ctx, rm, objects)

		By("waiting with kstatus until every object is Current or Failed")
		err := rm.WaitForSetWithContext(ctx, changes.ToObjMetadataSet(), ssa.WaitOptions{
			Interval: 2 * time.Second, Timeout: poisonedTimeout,
		})
		took := time.Since(start)
		AddReportEntry("poisoned folder", fmt.Sprintf("the wait ended after %s (timeout %s)", took.Round(time.Second), poisonedTimeout))
		Expect(err).To(MatchError(ContainSubstring("failed early due to stalled resources")))
		Expect(err).To(MatchError(ContainSubstring("Sandbox/%s/poisoned status: 'Failed'", ns)))
		Expect(err.Error()).NotTo(ContainSubstring("/healthy"), "the healthy Sandbox is Current")
		Expect(took).To(BeNumerically("<", poisonedBound), "the wait ran towards its timeout instead of ending on the Failed Sandbox")
		Expect(field(ns, "sandbox/poisoned", `{.status.conditions[?(@.type=="Stalled")].reason}`)).To(Equal("ServiceExited"))
		Expect(field(ns, "sandbox/poisoned", `{.status.conditions[?(@.type=="TopologyPoisoned")].status}`)).To(Equal("True"))

		pruneAll(ctx, rm, ns, objects)
	}, SpecTimeout(15*time.Minute))
})

// fluxResourceManager is a fluxcd/pkg/ssa resource manager on the suite's API server, polling status with
// kstatus, as kustomize-controller sets one up.
func fluxResourceManager() *ssa.ResourceManager {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	return ssa.NewResourceManager(c, polling.NewStatusPoller(c, c.RESTMapper(), polling.Options{}),
		ssa.Owner{Field: "dockside-e2e", Group: "e2e.dockside.dev"})
}

// applyStaged applies every object at once, server-side and staged, and returns what changed.
func applyStaged(ctx SpecContext, rm *ssa.ResourceManager, objects []*unstructured.Unstructured) *ssa.ChangeSet {
	GinkgoHelper()
	By(fmt.Sprintf("applying %d objects at once, server-side", len(objects)))
	changes, err := rm.ApplyAllStaged(ctx, objects, ssa.DefaultApplyOptions())
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Println(changes.String())
	return changes
}

// pruneAll deletes the objects as Flux prunes them and checks that Docker holds nothing of the namespace.
func pruneAll(ctx SpecContext, rm *ssa.ResourceManager, ns string, objects []*unstructured.Unstructured) {
	GinkgoHelper()
	By("deleting them all, as Flux prunes")
	_, err := rm.DeleteAll(ctx, objects, ssa.DefaultDeleteOptions())
	Expect(err).NotTo(HaveOccurred())
	Expect(rm.WaitForTermination(objects, ssa.WaitOptions{Interval: 2 * time.Second, Timeout: samplesTimeout})).To(Succeed())
	Expect(labelled(ns)).To(BeEmpty(), "Docker objects of namespace %s left behind", ns)
}

// readFolder reads every manifest of a folder into the namespace ns (Flux's targetNamespace).
func readFolder(dir, ns string) []*unstructured.Unstructured {
	GinkgoHelper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var objects []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		objs, err := ssautils.ReadObjects(bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred(), f)
		for _, o := range objs {
			if o.GetKind() == "Kustomization" {
				continue // a kustomize file lists the samples; it is no object of the cluster
			}
			o.SetNamespace(ns)
			objects = append(objects, o)
		}
	}
	Expect(objects).NotTo(BeEmpty())
	return objects
}

// labelled lists this node's containers, networks and volumes labelled with the namespace.
func labelled(ns string) []string {
	GinkgoHelper()
	var found []string
	for _, kind := range []string{"container", "network", "volume"} {
		args := []string{kind, "ls", "-q", "--filter", "label=" + dsv1alpha1.LabelNode + "=" + node,
			"--filter", "label=" + dsv1alpha1.LabelNamespace + "=" + ns}
		if kind == "container" {
			args = append(args, "-a")
		}
		out, err := dockercli.Run(args...)
		Expect(err).NotTo(HaveOccurred())
		for _, id := range strings.Fields(out) {
			found = append(found, kind+" "+id)
		}
	}
	return found
}
