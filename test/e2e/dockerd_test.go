//go:build e2e

package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/dockercli"
)

// ownDaemon is a Docker daemon the test starts, owns and stops, so that a spec may restart or kill a Docker
// daemon without touching the machine's own one. It has its own data-root, exec-root (and so its own
// containerd), socket, pidfile and config file, no default bridge, and leaves the host's firewall, forwarding
// and masquerading alone: the bridges Dockside creates on it carry traffic between containers on one bridge,
// which is all the specs need. Everything lives under ownDaemonDir(name), short enough for the unix sockets.
type ownDaemon struct {
	name   string
	dir    string
	driver string // storage driver it runs with, kept across restarts
	cmd    *exec.Cmd
	done   chan error
}

// ownDaemonImages are the images the specs run on an own daemon, loaded from the machine's daemon (never
// pulled).
var ownDaemonImages = []string{"dockside.dev/busybox:local", "dockside.dev/holder:local"}

// storageDrivers are tried in this order: overlay2 is the fastest; fuse-overlayfs is what the machine's own
// daemon uses; vfs copies every layer but works anywhere and is fine for busybox-sized images.
var storageDrivers = []string{"overlay2", "fuse-overlayfs", "vfs"}

const (
	ownDaemonPrefix = "dsd-"
	// ownDaemonStopGrace covers dockerd's own shutdown: up to 10 s to stop containers that ignore SIGTERM (a
	// busybox sleep as PID 1 does), then its shutdown timeout of 15 s.
	ownDaemonStopGrace = 45 * time.Second
	ownDaemonReadyWait = time.Minute
)

// ownDaemonDir is where an own daemon keeps everything. /tmp, not the test's temp dir: the containerd socket
// under the exec-root must stay within the 108 bytes of a unix socket path.
func ownDaemonDir(name string) string { return filepath.Join("/tmp", ownDaemonPrefix+name) }

// startDockerd starts an own daemon named name (a few letters) with the suite's images loaded, and registers
// its removal. A daemon left by a crashed run is stopped and removed first.
func startDockerd(name string) *ownDaemon {
	GinkgoHelper()
	reapLeftoverDaemons()
	d := &ownDaemon{name: name, dir: ownDaemonDir(name)}
	Expect(d.dir).NotTo(BeAnExistingFile(), "an own daemon %s of a run still going exists", name)
	Expect(os.MkdirAll(d.dir, 0o700)).To(Succeed())
	// The owner file lets a later run tell a leftover of a dead test from a daemon of a run still going.
	Expect(os.WriteFile(d.path("owner"), []byte(strconv.Itoa(os.Getpid())), 0o600)).To(Succeed())
	// An empty config file of its own: the default one is the machine daemon's and names its data-root.
	Expect(os.WriteFile(d.path("daemon.json"), []byte("{}\n"), 0o600)).To(Succeed())
	DeferCleanup(d.remove)

	var failures []string
	for _, driver := range storageDrivers {
		d.driver = driver
		err := d.launch()
		if err == nil {
			break
		}
		failures = append(failures, fmt.Sprintf("%s: %v", driver, err))
		d.stop()
		Expect(os.RemoveAll(d.path("data"))).To(Succeed())
		d.driver = ""
	}
	Expect(d.driver).NotTo(BeEmpty(), "no storage driver works for an own daemon: %s", strings.Join(failures, "; "))
	GinkgoWriter.Printf("own Docker daemon %s up at %s with %s\n", name, d.host(), d.driver)
	Expect(d.loadImages(ownDaemonImages...)).To(Succeed())
	return d
}

func (d *ownDaemon) path(elem string) string { return filepath.Join(d.dir, elem) }

// host is the daemon's address as --docker-host and docker -H take it.
func (d *ownDaemon) host() string { return "unix://" + d.path("docker.sock") }

// docker runs the Docker CLI against this daemon.
func (d *ownDaemon) docker(args ...string) (string, error) {
	return dockercli.Run(append([]string{"-H", d.host()}, args...)...)
}

func (d *ownDaemon) flags() []string {
	return []string{
		"--config-file=" + d.path("daemon.json"),
		"--data-root=" + d.path("data"),
		"--exec-root=" + d.path("exec"),
		"--pidfile=" + d.path("dockerd.pid"),
		"--host=" + d.host(),
		"--storage-driver=" + d.driver,
		// No default bridge, and nothing written to the host's firewall, forwarding or NAT, which the
		// machine's daemon owns.
		"--bridge=none",
		"--iptables=false",
		"--ip6tables=false",
		"--ip-forward=false",
		"--ip-masq=false",
		// Should a system containerd ever run, its namespaces stay apart from every other daemon's.
		"--containerd-namespace=" + ownDaemonPrefix + d.name,
		"--containerd-plugins-namespace=" + ownDaemonPrefix + d.name + "-plugins",
	}
}

// launch starts dockerd on the daemon's dirs and waits until it answers.
func (d *ownDaemon) launch() error {
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(d.path("dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "==== %s: starting dockerd with %s\n", time.Now().Format(time.RFC3339Nano), d.driver)
	// The reaper of a later run starts the daemon once more on these dirs, with the same driver.
	if err := os.WriteFile(d.path("driver"), []byte(d.driver), 0o600); err != nil {
		return err
	}
	d.clearStaleContainerdPid()
	cmd := exec.Command(bin, d.flags()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A group of its own: a Ctrl-C meant for the test reaches the daemon only through the test's cleanup, after
	// the agent using it has stopped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	d.cmd, d.done = cmd, make(chan error, 1)
	go func(done chan<- error) { done <- cmd.Wait(); logFile.Close() }(d.done)

	deadline := time.Now().Add(ownDaemonReadyWait)
	for {
		if _, err := d.docker("version", "--format", "{{.Server.Version}}"); err == nil {
			return nil
		}
		select {
		case err := <-d.done:
			d.done <- err // stop() reads it again
			return fmt.Errorf("dockerd exited before it answered (%v); see %s", err, d.path("dockerd.log"))
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer within %s; see %s", ownDaemonReadyWait, d.path("dockerd.log"))
		}
	}
}

// stop ends the daemon as its service manager would: SIGTERM, which stops its containers (none has a restart
// policy, so they stay stopped) and its containerd; SIGKILL if it takes longer than the grace.
func (d *ownDaemon) stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(ownDaemonStopGrace):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd = nil
	// A containerd outliving a killed dockerd would hold the exec-root.
	stopVerifiedPid(d.path("exec/containerd/containerd.pid"), d.dir)
}

// restart stops the daemon and starts it again on the same dirs, with the same options.
func (d *ownDaemon) restart() {
	GinkgoHelper()
	d.stop()
	Expect(d.launch()).To(Succeed())
}

// crashRestart kills dockerd with SIGKILL, as a crash or the OOM killer would, and starts it again on the same
// dirs. Its containerd goes with it, but the containers keep running in their shims until the new daemon,
// restoring without live-restore, stops them.
func (d *ownDaemon) crashRestart() {
	GinkgoHelper()
	Expect(d.cmd.Process.Kill()).To(Succeed())
	<-d.done
	d.cmd = nil
	Expect(d.launch()).To(Succeed())
}

// clearStaleContainerdPid removes a containerd pid file left by a killed daemon: dockerd 20.10 trusts a pid it
// finds there and, if that pid is alive as anything (or a zombie), waits for a containerd that never answers.
func (d *ownDaemon) clearStaleContainerdPid() {
	pidFile := d.path("exec/containerd/containerd.pid")
	if verifiedPid(pidFile, d.dir) == 0 {
		_ = os.Remove(pidFile)
	}
}

// leftovers lists every container, network and volume on this daemon labelled with the node, as "kind name".
func (d *ownDaemon) leftovers(node string) []string {
	GinkgoHelper()
	filter := "label=" + dsv1alpha1.LabelNode + "=" + node
	var found []string
	for _, ls := range [][]string{
		{"container", "ls", "-a", "--format", "{{.Names}}"},
		{"network", "ls", "--format", "{{.Name}}"},
		{"volume", "ls", "--format", "{{.Name}}"},
	} {
		out, err := d.docker(append(ls, "--filter", filter)...)
		Expect(err).NotTo(HaveOccurred())
		for _, name := range strings.Fields(out) {
			found = append(found, ls[0]+" "+name)
		}
	}
	return found
}

// loadImages copies images from the machine's daemon into this one: docker save | docker -H … load.
func (d *ownDaemon) loadImages(images ...string) error {
	save := exec.Command("docker", append([]string{"save"}, images...)...)
	load := exec.Command("docker", "-H", d.host(), "load")
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	var saveErr, loadErr strings.Builder
	save.Stderr, load.Stderr = &saveErr, &loadErr
	if err := load.Start(); err != nil {
		return err
	}
	if err := save.Run(); err != nil {
		_ = load.Wait()
		return fmt.Errorf("docker save: %v: %s", err, saveErr.String())
	}
	if err := load.Wait(); err != nil {
		return fmt.Errorf("docker load: %v: %s", err, loadErr.String())
	}
	return nil
}

// remove stops the daemon and removes everything it had: its containers and networks, mounts left under its
// dirs, then the dirs. On a failed spec it prints the daemon's log first.
func (d *ownDaemon) remove() {
	d.clear()
	d.stop()
	if CurrentSpecReport().Failed() {
		if data, err := os.ReadFile(d.path("dockerd.log")); err == nil {
			GinkgoWriter.Printf("---- dockerd %s log ----\n%s\n", d.name, data)
		}
	}
	Expect(removeDaemonDir(d.dir)).To(Succeed())
}

// clear removes every container and network the daemon holds, whoever made them: a network's bridge device
// lives in the host's namespace and outlives the data-root unless Docker removes the network itself.
func (d *ownDaemon) clear() {
	if d.cmd == nil {
		return
	}
	if ids, err := d.docker("container", "ls", "-aq"); err == nil && ids != "" {
		_, _ = d.docker(append([]string{"container", "rm", "-f"}, strings.Fields(ids)...)...)
	}
	_, _ = d.docker("network", "prune", "-f")
}

// reapLeftoverDaemons stops and removes the own daemons of runs that are gone (their owner process is dead),
// leaving those of a run still going alone.
func reapLeftoverDaemons() {
	GinkgoHelper()
	dirs, err := filepath.Glob(filepath.Join("/tmp", ownDaemonPrefix+"*"))
	Expect(err).NotTo(HaveOccurred())
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // not one of ours, or not yet written
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(owner))); err == nil && processAlive(pid) {
			continue
		}
		GinkgoWriter.Printf("removing the own Docker daemon left by a dead run in %s\n", dir)
		stopVerifiedPid(filepath.Join(dir, "dockerd.pid"), dir)
		// Containers of a daemon that was killed run on in their shims; a daemon started once more on the
		// dirs stops them (no live-restore) and removes them and their networks' bridges.
		if driver, err := os.ReadFile(filepath.Join(dir, "driver")); err == nil {
			d := &ownDaemon{name: strings.TrimPrefix(filepath.Base(dir), ownDaemonPrefix), dir: dir, driver: string(driver)}
			if err := d.launch(); err != nil {
				GinkgoWriter.Printf("the leftover daemon in %s did not start again: %v\n", dir, err)
			}
			d.clear()
			d.stop()
		}
		stopVerifiedPid(filepath.Join(dir, "exec/containerd/containerd.pid"), dir)
		Expect(removeDaemonDir(dir)).To(Succeed())
	}
}

// stopVerifiedPid stops the process whose pid the file holds, SIGTERM then SIGKILL, but only when its command
// line names dir: a pid file outliving its process may name someone else's by now.
func stopVerifiedPid(pidFile, dir string) {
	pid := verifiedPid(pidFile, dir)
	if pid == 0 {
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(ownDaemonStopGrace); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if !processAlive(pid) {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// verifiedPid is the pid the file holds when that process runs with dir in its command line, else 0.
func verifiedPid(pidFile, dir string) int {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 1 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), dir) {
		return 0 // gone, a zombie (empty command line), or someone else's by now
	}
	return pid
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// removeDaemonDir unmounts whatever is still mounted under dir (deepest first, lazily if busy) and removes it.
func removeDaemonDir(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, 0); err != nil {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				return fmt.Errorf("unmounting %s: %w", m, err)
			}
		}
	}
	return os.RemoveAll(dir)
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var found []string
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		fields := strings.Fields(scan.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	sort.Slice(found, func(i, j int) bool { return len(found[i]) > len(found[j]) })
	return found, scan.Err()
}

// startOwnAgent starts a second agent process, for node, on the own daemon d and against the suite's control
// plane, and registers its stop (which runs before the daemon's removal). Sandboxes reach it by spec.nodeName.
// Its bridges share the host's routing table with every other daemon's, so topologyPool must be a range no other
// agent on this machine uses. It has no host firewall (d writes no firewall rules either) and no egress proxy.
// Extra flags (a --capacity, say) come last and override these.
func startOwnAgent(d *ownDaemon, node, topologyPool string, extra ...string) *agentProcess {
	GinkgoHelper()
	a, err := startAgent(binDir(), node, cp.Kubeconfig, filepath.Join(GinkgoT().TempDir(), "agent-"+node+".log"),
		append([]string{
			"--docker-host=" + d.host(),
			"--host-firewall=false",
			"--egress-proxy-port=0",
			"--topology-pool=" + topologyPool,
		}, extra...)...,
	)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(a.stop)
	return a
}
