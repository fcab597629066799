//go:build integration

package hostfirewall_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// onOwnThread runs fn on an OS thread of its own that is thrown away afterwards: the goroutine ends without
// unlocking it, so a thread fn moved into another network namespace never runs anything else.
func onOwnThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- fn()
	}()
	return <-errc
}

// newNetNS makes a network namespace that belongs to the test alone and lives as long as the returned file:
// it has no name, so nothing outlives the test process even if it is killed.
func newNetNS(t *testing.T) *os.File {
	t.Helper()
	var ns *os.File
	err := onOwnThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare: %w", err)
		}
		var err error
		ns, err = os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		return err
	})
	if err != nil {
		t.Fatalf("new network namespace (the integration tier runs as root): %v", err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns
}

// inNetNS runs fn in ns. Sockets fn opens stay in ns wherever they are used later, and so do processes it
// starts.
func inNetNS(ns *os.File, fn func() error) error {
	return onOwnThread(func() error {
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return fn()
	})
}

// ip runs iproute2's ip in ns. Each of extra is open in it as /proc/self/fd/3, 4, ..., which is how a command
// names another namespace that has no name.
func ip(t *testing.T, ns *os.File, extra []*os.File, args ...string) {
	t.Helper()
	err := inNetNS(ns, func() error {
		cmd := exec.Command("ip", args...)
		cmd.ExtraFiles = extra
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ip %v: %v", args, err)
	}
}
