//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the E2B gateway's snapshots", func() {
	It("snapshot a sandbox's files as a Checkpoint and start a new sandbox from them", func() {
		c, ns, id := e2bSandbox()
		put := func(sandbox, text string) {
			GinkgoHelper()
			h := c.envd(sandbox)
			h.Set("Content-Type", "application/octet-stream")
			code, out := c.do(http.MethodPost, "/files?path=/workspace/notes/today.txt", h, strings.NewReader(text))
			Expect(code).To(Equal(http.StatusOK), string(out))
		}
		read := func(sandbox string) string {
			GinkgoHelper()
			code, out := c.do(http.MethodGet, "/files?path=/workspace/notes/today.txt", c.envd(sandbox), nil)
			Expect(code).To(Equal(http.StatusOK), string(out))
			return string(out)
		}
		put(id, "before the snapshot\n")

		code, out := c.api(http.MethodPost, "/sandboxes/"+id+"/snapshots", map[string]any{"name": "notes"})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		var snap struct {
			SnapshotID string   `json:"snapshotID"`
			Names      []string `json:"names"`
		}
		Expect(json.Unmarshal(out, &snap)).To(Succeed())
		Expect(snap.Names).To(Equal([]string{"notes"}))
		Expect(field(ns, "checkpoint/"+snap.SnapshotID, "{.status.phase}")).To(Equal("Ready"))
		Expect(field(ns, "checkpoint/"+snap.SnapshotID, "{.spec.sandboxName}")).To(Equal(id))
		put(id, "after the snapshot\n") // the new sandbox gets the snapshot's files, not the sandbox's now

		code, out = c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": snap.SnapshotID, "timeout": 300})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		var restored struct {
			SandboxID  string `json:"sandboxID"`
			TemplateID string `json:"templateID"`
		}
		Expect(json.Unmarshal(out, &restored)).To(Succeed())
		DeferCleanup(func() {
			code, out := c.api(http.MethodDelete, "/sandboxes/"+restored.SandboxID, nil)
			Expect(code).To(Equal(http.StatusNoContent), string(out))
			Eventually(func() []string { return heldInDocker(ns, restored.SandboxID) }).WithTimeout(90 * time.Second).Should(BeEmpty())
		})
		Expect(restored.TemplateID).To(Equal("base"))
		Expect(field(ns, "sandbox/"+restored.SandboxID, "{.spec.restoreFrom}")).To(Equal(snap.SnapshotID))
		Expect(read(restored.SandboxID)).To(Equal("before the snapshot\n"))
		Expect(read(id)).To(Equal("after the snapshot\n"))

		code, out = c.api(http.MethodDelete, "/templates/"+snap.SnapshotID, nil)
		Expect(code).To(Equal(http.StatusNoContent), string(out))
		Eventually(func() (string, error) {
			return kubectl("get", "-n", ns, "checkpoints", "-o", "name")
		}).WithTimeout(90 * time.Second).Should(BeEmpty())
	})
})
