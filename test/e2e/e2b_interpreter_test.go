//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// interpreter sends a request to the code interpreter of sandbox (port 49999) as e2b_code_interpreter does,
// through the one URL of the gateway: E2b-Sandbox-Id and E2b-Sandbox-Port name the sandbox and the port.
func (c e2bClient) interpreter(sandbox, method, path string, body any) (int, []byte) {
	GinkgoHelper()
	data, err := json.Marshal(body)
	Expect(err).NotTo(HaveOccurred())
	h := http.Header{"E2b-Sandbox-Id": {sandbox}, "E2b-Sandbox-Port": {"49999"}, "X-Access-Token": {c.key},
		"Content-Type": {"application/json"}}
	return c.do(method, path, h, bytes.NewReader(data))
}

// runCode runs code through /execute and returns E2B's lines, gathered: stdout and stderr joined, the main
// result's text, the error line, and the type of the last line.
func (c e2bClient) runCode(sandbox string, body map[string]any) (stdout, stderr, result string, errLine map[string]any, last string) {
	GinkgoHelper()
	code, out := c.interpreter(sandbox, http.MethodPost, "/execute", body)
	Expect(code).To(Equal(http.StatusOK), string(out))
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		Expect(json.Unmarshal(sc.Bytes(), &line)).To(Succeed(), sc.Text())
		switch line["type"] {
		case "stdout":
			stdout += line["text"].(string)
		case "stderr":
			stderr += line["text"].(string)
		case "result":
			Expect(line).To(HaveKeyWithValue("is_main_result", true))
			result = line["text"].(string)
		case "error":
			errLine = line
		}
		last = line["type"].(string)
	}
	return stdout, stderr, result, errLine, last
}

var _ = Describe("the E2B gateway's code interpreter", func() {
	It("runs code in contexts whose state persists, in the python image's dockside_interpreter", func() {
		if err := exec.Command("docker", "image", "inspect", "dockside.dev/python:local").Run(); err != nil {
			Skip("dockside.dev/python:local is not built (make images)")
		}
		c, ns := e2bTenant()
		sample, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "dockside_v1alpha1_sandboxtemplate_code_interpreter.yaml"))
		Expect(err).NotTo(HaveOccurred())
		apply(ns, string(sample))

		// The template name e2b_code_interpreter sends by default.
		code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "code-interpreter-v1", "timeout": 300})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		Expect(string(out)).To(ContainSubstring(`"templateID":"code-interpreter"`))
		id := sandboxID(out)
		DeferCleanup(func() {
			code, out := c.api(http.MethodDelete, "/sandboxes/"+id, nil)
			Expect(code).To(Equal(http.StatusNoContent), string(out))
			Eventually(func() []string { return heldInDocker(ns, id) }).WithTimeout(90 * time.Second).Should(BeEmpty())
		})

		// The default context: no context_id, no language, as run_code sends them.
		stdout, _, result, errLine, last := c.runCode(id, map[string]any{"code": "x = 1", "context_id": nil, "language": nil, "env_vars": nil})
		Expect([]any{stdout, result, errLine, last}).To(Equal([]any{"", "", map[string]any(nil), "end_of_execution"}))
		stdout, stderr, result, errLine, last := c.runCode(id, map[string]any{"code": "print(x+1)\nx*3"})
		Expect(stdout).To(Equal("2\n"))
		Expect(stderr).To(BeEmpty())
		Expect(result).To(Equal("3"))
		Expect(errLine).To(BeNil())
		Expect(last).To(Equal("end_of_execution"))

		_, _, result, errLine, _ = c.runCode(id, map[string]any{"code": "1/0"})
		Expect(result).To(BeEmpty())
		Expect(errLine).To(HaveKeyWithValue("name", "ZeroDivisionError"))
		Expect(errLine).To(HaveKeyWithValue("value", "division by zero"))
		Expect(errLine).To(HaveKeyWithValue("traceback", And(ContainSubstring("Traceback (most recent call last)"), ContainSubstring("ZeroDivisionError: division by zero"))))

		// A second context does not see x; it starts where the template's commands do.
		code, out = c.interpreter(id, http.MethodPost, "/contexts", map[string]any{"language": "python"})
		Expect(code).To(Equal(http.StatusOK), string(out))
		var made struct{ ID, Language, Cwd string }
		Expect(json.Unmarshal(out, &made)).To(Succeed())
		Expect(made.Language).To(Equal("python"))
		Expect(made.Cwd).To(Equal("/home/user"))
		stdout, _, _, errLine, _ = c.runCode(id, map[string]any{"code": "import os\nprint(os.getcwd())\nx", "context_id": made.ID})
		Expect(stdout).To(Equal("/home/user\n"))
		Expect(errLine).To(HaveKeyWithValue("name", "NameError"))
		_, _, result, _, _ = c.runCode(id, map[string]any{"code": "x", "language": "python"})
		Expect(result).To(Equal("1"), "the default context kept x")

		code, out = c.interpreter(id, http.MethodGet, "/contexts", nil)
		Expect(code).To(Equal(http.StatusOK), string(out))
		Expect(string(out)).To(And(ContainSubstring(`"id":"default"`), ContainSubstring(`"id":"`+made.ID+`"`)))
		code, out = c.interpreter(id, http.MethodDelete, "/contexts/"+made.ID, nil)
		Expect(code).To(Equal(http.StatusOK), string(out))
		code, out = c.interpreter(id, http.MethodPost, "/execute", map[string]any{"code": "1", "context_id": made.ID})
		Expect(code).To(Equal(http.StatusNotFound), string(out))
		code, out = c.interpreter(id, http.MethodPost, "/execute", map[string]any{"code": "1", "language": "javascript"})
		Expect(code).To(Equal(http.StatusBadRequest), string(out))
	})
})
