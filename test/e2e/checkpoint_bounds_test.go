//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// storeEntries lists the archives and the unfinished captures in the agent's checkpoint store.
func storeEntries(sub string) []string {
	GinkgoHelper()
	list, err := os.ReadDir(filepath.Join(agent.checkpoints, sub))
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, e := range list {
		names = append(names, e.Name())
	}
	return names
}

var _ = Describe("Checkpoint bounds on real Docker", func() {
	It("refuses to capture a sparse 2 GiB file from a 16Mi workspace, storing nothing and thawing the Sandbox", func() {
		ns := newNamespace("ckpt-sparse")
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: small
spec:
  image: dockside.dev/busybox:local
  workspace:
    size: 16Mi
`)
		waitFor(ns, "sandbox/small", "condition=Ready", 60*time.Second)
		inPrimary(ns, "small", "truncate -s 2G /workspace/sparse && echo kept > /workspace/note.txt")
		Expect(inPrimary(ns, "small", "stat -c %s /workspace/sparse")).To(Equal("2147483648"))
		archives := storeEntries("sha256")

		start := time.Now()
		apply(ns, snapshotManifest("small"))
		waitFor(ns, "checkpoint/snap", "jsonpath={.status.phase}=Failed", 2*time.Minute)
		failedIn := time.Since(start).Round(time.Millisecond)
		Expect(field(ns, "checkpoint/snap", `{.status.conditions[?(@.type=="Ready")].reason}`)).To(Equal("CaptureTooLarge"))
		// 16Mi, an eighth more (2Mi) and 1 MiB.
		Expect(field(ns, "checkpoint/snap", `{.status.conditions[?(@.type=="Ready")].message}`)).To(
			ContainSubstring(`Sandbox "small" passed 19922944 bytes, the workspace's size (16Mi) plus archive overhead`))
		AddReportEntry("capture of a sparse 2 GiB file in a 16Mi workspace", "refused (CaptureTooLarge) "+failedIn.String()+" after apply")

		Expect(storeEntries("sha256")).To(Equal(archives), "no new archive")
		Expect(storeEntries("tmp")).To(BeEmpty(), "no unfinished capture left")
		Expect(field(ns, "sandbox/small", "{.status.phase}")).To(Equal("Running"), "thawed after the refused copy")
		Expect(docker("inspect", "-f", "{{.State.Paused}}", onlyContainer(ns, "small", "primary"))).To(Equal("false"))
		Expect(inPrimary(ns, "small", "cat /workspace/note.txt")).To(Equal("kept"), "the workspace is left as it was")

		deleteCheckpoint(ns, "snap")
		deleteAndExpectGone(ns, "small")
	})
})
