//go:build e2e

package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// e2bOutput gathers a Start stream's stdout and stderr and its end event.
func e2bOutput(events []map[string]any) (stdout, stderr string, end map[string]any) {
	GinkgoHelper()
	for _, ev := range events {
		e, ok := ev["event"].(map[string]any)
		Expect(ok).To(BeTrue(), "an event without its event field: %v", ev)
		if d, ok := e["data"].(map[string]any); ok {
			for k, v := range d {
				b, err := base64.StdEncoding.DecodeString(v.(string))
				Expect(err).NotTo(HaveOccurred())
				if k == "stdout" {
					stdout += string(b)
				} else {
					stderr += string(b)
				}
			}
		}
		if e, ok := e["end"].(map[string]any); ok {
			end = e
		}
	}
	return stdout, stderr, end
}

// sandboxID is the sandboxID of a create's answer.
func sandboxID(created []byte) string {
	GinkgoHelper()
	var sb struct {
		SandboxID string `json:"sandboxID"`
	}
	Expect(json.Unmarshal(created, &sb)).To(Succeed())
	Expect(sb.SandboxID).NotTo(BeEmpty(), string(created))
	return sb.SandboxID
}

var _ = Describe("the E2B gateway and the base image", func() {
	It("runs a command the way E2B's SDKs do, /bin/bash -l -c, as user in /home/user", func() {
		// make images builds base; make test-images does not (docs/images.md).
		if err := exec.Command("docker", "image", "inspect", "dockside.dev/base:local").Run(); err != nil {
			Skip("dockside.dev/base:local is not built (make images)")
		}
		c, ns := e2bTenant()
		// The sample template replaces the busybox one of e2bRole under the same name, base (deleted first: a
		// template's workspace cannot change).
		_, err := kubectl("delete", "-n", ns, "sandboxtemplate/base")
		Expect(err).NotTo(HaveOccurred())
		sample, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "dockside_v1alpha1_sandboxtemplate_base.yaml"))
		Expect(err).NotTo(HaveOccurred())
		apply(ns, string(sample))
		Expect(field(ns, "sandboxtemplate/base", "{.spec.sandbox.image}")).To(Equal("dockside.dev/base:local"))

		// The template name the SDK sends by default.
		code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "base", "timeout": 300})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		id := sandboxID(out)
		DeferCleanup(func() {
			code, out := c.api(http.MethodDelete, "/sandboxes/"+id, nil)
			Expect(code).To(Equal(http.StatusNoContent), string(out))
			Eventually(func() []string { return heldInDocker(ns, id) }).WithTimeout(90 * time.Second).Should(BeEmpty())
		})

		events, endOfStream := c.start(id, map[string]any{"process": map[string]any{"cmd": "/bin/bash",
			"args": []string{"-l", "-c", `whoami; echo "$HOME"; pwd; echo "$0"; echo hi > greeting; cat /home/user/greeting`}}})
		Expect(endOfStream).NotTo(HaveKey("error"))
		stdout, stderr, end := e2bOutput(events)
		Expect(stderr).To(BeEmpty())
		Expect(strings.Split(stdout, "\n")).To(Equal([]string{"user", "/home/user", "/home/user", "/bin/bash", "hi", ""}))
		// Connect's JSON leaves a zero exitCode out.
		Expect(end).To(HaveKeyWithValue("exited", true))
		Expect(end).NotTo(HaveKey("exitCode"))

		code, out = c.do(http.MethodGet, "/files?path=/home/user/greeting", c.envd(id), nil)
		Expect(code).To(Equal(http.StatusOK), string(out))
		Expect(string(out)).To(Equal("hi\n"), "the workspace is /home/user")
	})
})
