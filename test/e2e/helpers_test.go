//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// newNamespace creates a namespace of the spec's own. The local control plane has no namespace controller,
// so namespaces are never deleted; the objects in them are, and the control plane goes away with the suite.
func newNamespace(prefix string) string {
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000_000)
	_, err := kubectl("create", "namespace", ns)
	Expect(err).NotTo(HaveOccurred())
	return ns
}

// apply sends a manifest through `kubectl apply`, as a user would.
func apply(ns, manifest string) {
	GinkgoHelper()
	_, err := admin().RunWithInput(manifest, "apply", "-n", ns, "-f", "-")
	Expect(err).NotTo(HaveOccurred())
}

// waitFor runs `kubectl wait` with the given condition, e.g. "condition=Ready" or "jsonpath={.status.phase}=Failed".
func waitFor(ns, object, condition string, timeout time.Duration) {
	GinkgoHelper()
	_, err := kubectl("wait", "-n", ns, object, "--for="+condition, fmt.Sprintf("--timeout=%ds", int(timeout.Seconds())))
	if err != nil {
		status, _ := kubectl("get", "-n", ns, object, "-o", "jsonpath={.status}")
		Fail(fmt.Sprintf("%s never reached %s: %v\nstatus: %s", object, condition, err, status))
	}
}

// field reads one JSONPath of an object.
func field(ns, object, jsonpath string) string {
	GinkgoHelper()
	out, err := kubectl("get", "-n", ns, object, "-o", "jsonpath="+jsonpath)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// containers lists the IDs of this node's labelled containers in a namespace, of one Sandbox when name is set
// and of one role when role is set.
func containers(ns, name, role string) []string {
	GinkgoHelper()
	args := []string{"container", "ls", "-aq", "--no-trunc",
		"--filter", "label=" + dsv1alpha1.LabelNode + "=" + node,
		"--filter", "label=" + dsv1alpha1.LabelNamespace + "=" + ns}
	if name != "" {
		args = append(args, "--filter", "label="+dsv1alpha1.LabelName+"="+name)
	}
	if role != "" {
		args = append(args, "--filter", "label="+dsv1alpha1.LabelRole+"="+role)
	}
	out, err := docker(args...)
	Expect(err).NotTo(HaveOccurred())
	return strings.Fields(out)
}

// containerTable describes ns's containers, a line each (ID, name, role, state, creation time), for a
// failure message that must say which container is one too many.
func containerTable(ns string) string {
	out, err := docker("container", "ls", "-a", "--no-trunc",
		"--filter", "label="+dsv1alpha1.LabelNode+"="+node, "--filter", "label="+dsv1alpha1.LabelNamespace+"="+ns,
		"--format", `{{.ID}} {{.Names}} {{.Label "`+dsv1alpha1.LabelRole+`"}} {{.Status}} {{.CreatedAt}}`)
	if err != nil {
		return err.Error()
	}
	return out
}

// onlyContainer is the one container of a role, failing when there is none or more than one.
func onlyContainer(ns, name, role string) string {
	GinkgoHelper()
	ids := containers(ns, name, role)
	Expect(ids).To(HaveLen(1), "containers of role %s for %s/%s", role, ns, name)
	return ids[0]
}

// heldWorkspace is the holder container of a Sandbox's workspace. A new session's holder is made by the pass
// after its primary started, off its way to Ready (docs/design/docker-mapping.md, "Why the holder exists"), so
// a session just Ready may not have it yet: this waits for it.
func heldWorkspace(ns, name string) string {
	GinkgoHelper()
	Eventually(func() []string { return containers(ns, name, dsv1alpha1.RoleHolder) }).
		WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(HaveLen(1), "the holder of %s/%s", ns, name)
	return onlyContainer(ns, name, dsv1alpha1.RoleHolder)
}

// deleteAndExpectGone deletes a Sandbox with kubectl (which waits for the finalizer) and checks that Docker
// holds nothing labelled for it any more.
func deleteAndExpectGone(ns, name string) {
	GinkgoHelper()
	_, err := kubectl("delete", "-n", ns, "sandbox", name, "--timeout=90s")
	Expect(err).NotTo(HaveOccurred())
	Expect(heldInDocker(ns, name)).To(BeEmpty(), "left in Docker for %s/%s", ns, name)
}

// heldInDocker lists what Docker holds labelled for a Sandbox: containers, then networks and volumes, each
// as "kind id".
func heldInDocker(ns, name string) []string {
	GinkgoHelper()
	var held []string
	for _, id := range containers(ns, name, "") {
		held = append(held, "container "+id)
	}
	filter := []string{"--filter", "label=" + dsv1alpha1.LabelNamespace + "=" + ns, "--filter", "label=" + dsv1alpha1.LabelName + "=" + name}
	for _, kind := range []string{"network", "volume"} {
		out, err := docker(append([]string{kind, "ls", "-q"}, filter...)...)
		Expect(err).NotTo(HaveOccurred())
		for _, id := range strings.Fields(out) {
			held = append(held, kind+" "+id)
		}
	}
	return held
}
