// Package controlprocs finds the processes of a local control plane (internal/localcluster) by the port they
// serve, so that a test can freeze one (SIGSTOP) as a control plane that stops answering would, and let it go
// on (SIGCONT), or kill one and start it again (restart.go) as a crash and its supervisor would. Only
// processes of the test's own control plane are found: the port names them.
package controlprocs

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// APIServer is the PID of the kube-apiserver that serves host, the URL of a rest.Config
// (https://127.0.0.1:PORT).
func APIServer(host string) (int, error) {
	u, err := url.Parse(host)
	if err != nil || u.Port() == "" {
		return 0, fmt.Errorf("no port in the API server's address %q", host)
	}
	return find("kube-apiserver", "--secure-port="+u.Port())
}

// Etcd is the PID of the etcd that the kube-apiserver apiServer stores in: the one serving its --etcd-servers.
func Etcd(apiServer int) (int, error) {
	args, err := cmdline(apiServer)
	if err != nil {
		return 0, err
	}
	for _, a := range args {
		if servers, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
			return find("etcd", "--listen-client-urls="+servers)
		}
	}
	return 0, fmt.Errorf("kube-apiserver %d has no --etcd-servers", apiServer)
}

// cmdline is the program and arguments of process pid.
func cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, fmt.Errorf("reading the command line of process %d: %w", pid, err)
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}

// find is the one process whose program is name and whose arguments hold arg.
func find(name, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("listing processes: %w", err)
	}
	var found []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args, err := cmdline(pid)
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		if filepath.Base(args[0]) == name && slices.Contains(args[1:], arg) {
			found = append(found, pid)
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%d processes of %s with %s, not one", len(found), name, arg)
	}
	return found[0], nil
}

// Freeze stops pid with SIGSTOP; the thaw it returns lets it go on with SIGCONT. Every connection to it stays
// open and unanswered meanwhile, as with a control plane that hangs.
func Freeze(pid int) (thaw func() error, err error) {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping process %d: %w", pid, err)
	}
	return func() error {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("continuing process %d: %w", pid, err)
		}
		return nil
	}, nil
}
