//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
)

// agentProcess is the real dockside-agent binary, run as a child of the test.
type agentProcess struct {
	cmd         *exec.Cmd
	done        chan error
	log         string
	checkpoints string // the node's checkpoint store, next to the log
}

// startAgent starts the agent for node; extra flags come last, so they override the suite's defaults (an agent
// on a daemon of the test's own passes --docker-host and the like).
func startAgent(bin, node, kubeconfig, logPath string, extra ...string) (*agentProcess, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	checkpoints := filepath.Join(filepath.Dir(logPath), "checkpoints")
	cmd := exec.Command(filepath.Join(bin, "dockside-agent"),
		"--node-name="+node,
		"--capacity=100", // the density spec runs 60 Sandboxes at once
		// ... holding 60 GiB of memory limits and workspaces, more than this host has: the suite tests other
		// things than admission by memory (the integration tier does), and its Sandboxes use little of it.
		"--allocatable-memory=1Ti",
		"--checkpoint-dir="+checkpoints,
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
		// The suite's "internet" is a server of the test's own on the host's loopback (egress_test.go): no
		// packet leaves the machine. The proxy refuses loopback by default; this range makes that one server
		// reachable, and 127.0.0.2 stays a forbidden address.
		"--egress-permit=127.0.0.1/32",
	)
	cmd.Args = append(cmd.Args, extra...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	a := &agentProcess{cmd: cmd, done: make(chan error, 1), log: logPath, checkpoints: filepath.Join(checkpoints, node)}
	go func() { a.done <- cmd.Wait(); logFile.Close() }()
	DeferCleanup(a.printLogOnFailure)
	return a, nil
}

// stop asks the agent to exit as a person would (SIGTERM) and kills it if it does not within the grace period.
func (a *agentProcess) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
		Fail("the agent did not exit within 30s of SIGTERM")
	}
}

// kill ends the agent as a crash would (SIGKILL): it cannot release its Lease.
func (a *agentProcess) kill() {
	_ = a.cmd.Process.Kill()
	<-a.done
}

// restart starts the agent again after kill, with the same flags and its output appended to the same log, as
// a process supervisor would.
func (a *agentProcess) restart() error {
	logFile, err := os.OpenFile(a.log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	cmd := exec.Command(a.cmd.Path, a.cmd.Args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("restarting the agent: %w", err)
	}
	done := make(chan error, 1)
	a.cmd, a.done = cmd, done
	go func() { done <- cmd.Wait(); logFile.Close() }()
	return nil
}

func (a *agentProcess) printLogOnFailure() {
	if CurrentSpecReport().Failed() {
		if data, err := os.ReadFile(a.log); err == nil {
			GinkgoWriter.Printf("---- agent log ----\n%s\n", data)
		}
	}
}
