//go:build integration

package dataplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/processes"
	"github.com/dockside-dev/dockside/test/internal/sandboxexec"
)

// waitForSignal plays every command as: print "up", then wait for a signal and exit with 128 plus its number.
func waitForSignal(ctx context.Context, _ string, req dd.StreamExecRequest) int {
	fmt.Fprintln(req.Stdout, "up")
	select {
	case sig := <-req.Signals:
		sig.Done <- nil
		return 128 + int(sig.Number)
	case <-ctx.Done():
		return 0
	}
}

// processesCall sends method to .../sandboxes/name/processes+pathQuery through the API server as cfg's user, and
// returns the status code and body.
func processesCall(cfg *rest.Config, method, ns, name, pathQuery string) (int, string) {
	GinkgoHelper()
	code, body, err := sandboxexec.Processes(cfg, method, ns, name, pathQuery)
	Expect(err).NotTo(HaveOccurred())
	return code, body
}

// statusMessage is the message of a Status answer.
func statusMessage(body string) string {
	var st metav1.Status
	Expect(json.Unmarshal([]byte(body), &st)).To(Succeed(), body)
	return st.Message
}

var _ = Describe("processes through the API server", Ordered, func() {
	var alice, viewer *rest.Config

	BeforeAll(func() {
		namespace("team-p")
		namespace("team-q")
		alice = userConfig("paula", "dockside-edit", "team-p")
		viewer = userConfig("vera", "dockside-view", "team-p")
		for _, n := range nodes {
			n.driver.SetStreamExecHandler(waitForSignal)
		}
		runningSandbox("team-p", "near", "node-a", dsv1alpha1.LifecycleRunning)
		runningSandbox("team-p", "far", "node-b", dsv1alpha1.LifecycleRunning)
		runningSandbox("team-q", "other", "node-a", dsv1alpha1.LifecycleRunning)
	})

	It("starts a background process that outlives its call, lists it, reads its output and signals it (forwarded to node-b)", func() {
		code, body := processesCall(alice, "POST", "team-p", "far", "?command=sleep&command=300&id=job")
		Expect(code).To(Equal(http.StatusCreated), body)
		Eventually(func() string {
			_, out := processesCall(alice, "GET", "team-p", "far", "/job/stdout")
			return out
		}).WithTimeout(30 * time.Second).Should(Equal("up\n"))
		code, body = processesCall(alice, "GET", "team-p", "far", "")
		Expect(code).To(Equal(http.StatusOK))
		var list processes.List
		Expect(json.Unmarshal([]byte(body), &list)).To(Succeed())
		Expect(list.Items).To(ConsistOf(And(HaveField("ID", "job"), HaveField("Running", true), HaveField("Background", true))))

		code, body = processesCall(alice, "POST", "team-p", "far", "/job/signal?signal=TERM")
		Expect(code).To(Equal(http.StatusOK), body)
		var p processes.Process
		Eventually(func() bool {
			_, body := processesCall(alice, "GET", "team-p", "far", "/job")
			Expect(json.Unmarshal([]byte(body), &p)).To(Succeed())
			return p.Running
		}).WithTimeout(30 * time.Second).Should(BeFalse())
		Expect(p.ExitCode).To(HaveValue(Equal(143)), "128 + SIGTERM")
	})

	It("refuses dockside-view and other namespaces in the API server's words", func() {
		code, body := processesCall(viewer, "GET", "team-p", "near", "")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(statusMessage(body)).To(ContainSubstring(`User "vera" cannot get resource "sandboxes/processes" in API group "subresources.dockside.dev" in the namespace "team-p"`))
		code, body = processesCall(viewer, "POST", "team-p", "near", "?command=true")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(statusMessage(body)).To(ContainSubstring(`User "vera" cannot create resource "sandboxes/processes"`))
		code, body = processesCall(alice, "POST", "team-q", "other", "?command=true")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(statusMessage(body)).To(ContainSubstring(`User "paula" cannot create resource "sandboxes/processes" in API group "subresources.dockside.dev" in the namespace "team-q"`))
	})

	// What kubectl dockside exec does with Ctrl-C when it has no terminal.
	for _, protocol := range []string{"websocket", "spdy"} {
		It("signals an exec that named itself, without a terminal ("+protocol+")", func() {
			exec, err := sandboxexec.Executor(alice, protocol, "team-p", "near",
				url.Values{"command": {"sleep", "300"}, "stdout": {"true"}, "process": {"ctl-c-" + protocol}})
			Expect(err).NotTo(HaveOccurred())
			var out bytes.Buffer
			done := make(chan error, 1)
			go func() {
				done <- exec.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out})
			}()
			Eventually(func() int {
				code, _ := processesCall(alice, "POST", "team-p", "near", "/ctl-c-"+protocol+"/signal?signal=INT")
				return code
			}).WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
			var err2 error
			Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&err2))
			var exit utilexec.CodeExitError
			Expect(errors.As(err2, &exit)).To(BeTrue(), "an exit code, not %v", err2)
			Expect(exit.Code).To(Equal(130), "128 + SIGINT")
			code, body := processesCall(alice, "GET", "team-p", "near", "/ctl-c-"+protocol+"/stdout")
			Expect(code).To(Equal(http.StatusConflict))
			Expect(statusMessage(body)).To(ContainSubstring("its output went to its client"))
		})
	}
})
