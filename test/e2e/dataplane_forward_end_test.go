//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/dockside-dev/dockside/test/internal/syncbuffer"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A port-forward ends with its Sandbox, as kubectl's ends with its pod (docs/design/dataplane.md, "Calls end
// with their Sandbox"): the plugin exits saying why, and its local port is closed, so no later connection is
// dialled to the address the Sandbox's container had.
var _ = Describe("the data plane: a port-forward ends with its Sandbox", Ordered, func() {
	var ns string

	BeforeAll(func() {
		ns = newNamespace("forward-end")
		web, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "dockside_v1alpha1_sandboxservice_web.yaml"))
		Expect(err).NotTo(HaveOccurred())
		apply(ns, string(web))
	})

	// served makes a Sandbox with the web service, Ready, and deletes it when the spec ends.
	served := func(name string) {
		apply(ns, fmt.Sprintf("apiVersion: dockside.dev/v1alpha1\nkind: Sandbox\nmetadata: {name: %s}\nspec: {image: dockside.dev/busybox:local, services: [web]}\n", name))
		DeferCleanup(func() {
			_, err := kubectl("delete", "-n", ns, "sandbox", name, "--ignore-not-found", "--timeout=90s")
			Expect(err).NotTo(HaveOccurred())
			Expect(heldInDocker(ns, name)).To(BeEmpty(), "left in Docker for %s/%s", ns, name)
		})
		waitFor(ns, "sandbox/"+name, "condition=Ready", 3*time.Minute)
	}

	// forward starts kubectl dockside port-forward to the web service, shows a page through it, and returns
	// the local port, the plugin's output and the channel its end comes on.
	forward := func(name string) (int, *syncbuffer.Buffer, <-chan error) {
		local := freePort()
		cmd := pluginCommand("port-forward", "-n", ns, name, "web:8080", fmt.Sprint(local))
		out := &syncbuffer.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		Expect(cmd.Start()).To(Succeed())
		ended := make(chan error, 1)
		go func() {
			ended <- cmd.Wait()
			close(ended)
		}()
		DeferCleanup(func() {
			_ = cmd.Process.Kill() // gone already when the spec passed
			Eventually(ended, time.Minute).Should(BeClosed())
		})
		Eventually(out.String, time.Minute).Should(ContainSubstring(fmt.Sprintf("Forwarding from 127.0.0.1:%d -> 8080", local)))
		Expect(page(local)).To(Equal("ok\n"), out.String())
		return local, out, ended
	}

	// exitsSaying waits for the plugin to exit with 1 and message, and shows its local port closed.
	exitsSaying := func(local int, out *syncbuffer.Buffer, ended <-chan error, message string) {
		var err error
		Eventually(ended, 3*time.Minute).Should(Receive(&err), out.String())
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "exit code 1, not %v: %s", err, out.String())
		Expect(exit.ExitCode()).To(Equal(1), out.String())
		Expect(out.String()).To(ContainSubstring(message))
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 10*time.Second)
		if err == nil {
			conn.Close()
		}
		Expect(err).To(HaveOccurred(), "nothing listens on the forward's local port any more")
	}

	It("exits when the Sandbox is deleted", func() {
		served("gone")
		local, out, ended := forward("gone")
		_, err := kubectl("delete", "-n", ns, "sandbox", "gone", "--wait=false")
		Expect(err).NotTo(HaveOccurred())
		exitsSaying(local, out, ended, `sandbox "gone" was deleted`)
	})

	It("exits when the Sandbox is rebuilt, and a new forward reaches the new container", func() {
		served("rolled")
		local, out, ended := forward("rolled")
		_, err := kubectl("patch", "-n", ns, "sandbox", "rolled", "--type=merge", "-p", `{"spec":{"env":[{"name":"ROLL","value":"1"}]}}`)
		Expect(err).NotTo(HaveOccurred())
		exitsSaying(local, out, ended, `sandbox "rolled" was rebuilt (topology generation 2 replaced 1)`)

		waitFor(ns, "sandbox/rolled", "jsonpath={.status.topologyGeneration}=2", time.Minute)
		waitFor(ns, "sandbox/rolled", "condition=Ready", 3*time.Minute)
		forward("rolled")
	})
})

// page is what the web service answers at / through a local port.
func page(local int) (string, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", local))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}
