// Package owndockerd starts, restarts and removes Docker daemons of a test's own on this machine, next to the
// machine's own daemon, which it never touches: the end-to-end specs use them to restart or kill a daemon and to
// run a fleet of nodes, and the benchmarks to run a fleet of nodes. Each has its own data-root, exec-root (and so
// its own containerd), socket, pidfile and config file, no default bridge, and leaves the host's firewall,
// forwarding and masquerading alone: the bridges Dockside creates on it carry traffic between containers on one
// bridge, which is all the tests need. Images come from the machine's daemon (docker save | load), never a pull.
package owndockerd

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

// Daemon is a Docker daemon the test started and owns. Everything lives under Dir, short enough for the unix
// sockets.
type Daemon struct {
	Name   string
	Dir    string
	Driver string // storage driver it runs with, kept across restarts
	// Resolver, when set, is the only nameserver of the host's resolv.conf as this daemon reads it (see
	// StartResolving); the machine's own /etc/resolv.conf is untouched.
	Resolver string
	// GVisor, when set, registers gVisor's runsc with the daemon as runtime GVisorRuntime (see StartGVisor).
	GVisor bool
	cmd    *exec.Cmd
	done   chan error
}

// storageDrivers are tried in this order: overlay2 is the fastest; fuse-overlayfs is what the machine's own
// daemon uses; vfs copies every layer but works anywhere and is fine for busybox-sized images.
var storageDrivers = []string{"overlay2", "fuse-overlayfs", "vfs"}

const (
	prefix = "dsd-"
	// stopGrace covers dockerd's own shutdown: up to 10 s to stop containers that ignore SIGTERM (a busybox
	// sleep as PID 1 does), then its shutdown timeout of 15 s.
	stopGrace = 45 * time.Second
	// readyWait covers a restart after a crash too: dockerd answers only once it has restored every container,
	// stopping each one it finds running (up to 10 s for each that ignores SIGTERM) on a machine that may be
	// loaded. A landing run on 6 Dec missed 2 minutes after a SIGKILL; a spec's own margin is wider still.
	readyWait = 4 * time.Minute
	// logTail is how many of the daemon's last log lines an error carries: the log is gone with the test's
	// files, and CI shows only the error.
	logTail = 25
)

// dirOf is where an own daemon keeps everything. /tmp, not the test's temp dir: the containerd socket under the
// exec-root must stay within the 108 bytes of a unix socket path.
func dirOf(name string) string { return filepath.Join("/tmp", prefix+name) }

// Start starts an own daemon named name (a few letters, unique among the daemons running on the machine) with
// images loaded from the machine's daemon. Call ReapLeftovers first. On an error nothing of it is left.
func Start(name string, images ...string) (*Daemon, error) {
	return StartResolving(name, "", images...)
}

// StartGVisor is Start with gVisor's runsc registered as the daemon's runtime GVisorRuntime, as
// docs/deploy.md's daemon.json does on a host. Call GVisorInstalled first.
func StartGVisor(name string, images ...string) (*Daemon, error) {
	return start(&Daemon{Name: name, Dir: dirOf(name), GVisor: true}, images)
}

// StartResolving is Start with a daemon that sees resolver as the host's only nameserver: it runs in a mount
// namespace of its own in which the daemon's resolv.conf is bound over /etc/resolv.conf, as a host whose
// resolver listens on loopback would have it. "" leaves the host's.
func StartResolving(name, resolver string, images ...string) (*Daemon, error) {
	return start(&Daemon{Name: name, Dir: dirOf(name), Resolver: resolver}, images)
}

func start(d *Daemon, images []string) (*Daemon, error) {
	if _, err := os.Stat(d.Dir); err == nil {
		return nil, fmt.Errorf("an own daemon %s of a run still going exists in %s", d.Name, d.Dir)
	}
	if err := d.start(images); err != nil {
		return nil, errors.Join(err, d.Remove())
	}
	return d, nil
}

func (d *Daemon) start(images []string) error {
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("making the daemon's folder: %w", err)
	}
	// The owner file lets a later run tell a leftover of a dead test from a daemon of a run still going.
	if err := os.WriteFile(d.path("owner"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return fmt.Errorf("writing the owner file: %w", err)
	}
	// A config file of its own: the default one is the machine daemon's and names its data-root.
	if err := os.WriteFile(d.path("daemon.json"), d.config(), 0o600); err != nil {
		return fmt.Errorf("writing the daemon's config: %w", err)
	}
	var failures []string
	for _, driver := range storageDrivers {
		d.Driver = driver
		err := d.launch()
		if err == nil {
			return d.LoadImages(images...)
		}
		failures = append(failures, fmt.Sprintf("%s: %v", driver, err))
		d.Stop()
		if err := os.RemoveAll(d.path("data")); err != nil {
			return fmt.Errorf("removing the data of the failed start: %w", err)
		}
	}
	d.Driver = ""
	return fmt.Errorf("no storage driver works for an own daemon: %s", strings.Join(failures, "; "))
}

func (d *Daemon) path(elem string) string { return filepath.Join(d.Dir, elem) }

// Host is the daemon's address as --docker-host and docker -H take it.
func (d *Daemon) Host() string { return "unix://" + d.path("docker.sock") }

// LogPath is the daemon's log file.
func (d *Daemon) LogPath() string { return d.path("dockerd.log") }

// Docker runs the Docker CLI against this daemon.
func (d *Daemon) Docker(args ...string) (string, error) {
	return dockercli.Run(append([]string{"-H", d.Host()}, args...)...) //nolint:wrapcheck // its error names the whole command
}

// AgentFlags are the flags an agent needs to drive this daemon next to other agents on the machine: its
// socket, no host firewall (the daemon writes no firewall rules either), no egress proxy (its port is the
// machine's), and topologyPool for its bridges, which share the host's routing table with every other daemon's
// and so must be a range no other agent on this machine uses.
func (d *Daemon) AgentFlags(topologyPool string) []string {
	return []string{
		"--docker-host=" + d.Host(),
		"--host-firewall=false",
		"--egress-proxy-port=0",
		"--topology-pool=" + topologyPool,
	}
}

func (d *Daemon) flags() []string {
	return []string{
		"--config-file=" + d.path("daemon.json"),
		"--data-root=" + d.path("data"),
		"--exec-root=" + d.path("exec"),
		"--pidfile=" + d.path("dockerd.pid"),
		"--host=" + d.Host(),
		"--storage-driver=" + d.Driver,
		// No default bridge, and nothing written to the host's firewall, forwarding or NAT, which the
		// machine's daemon owns.
		"--bridge=none",
		"--iptables=false",
		"--ip6tables=false",
		"--ip-forward=false",
		"--ip-masq=false",
		// Should a system containerd ever run, its namespaces stay apart from every other daemon's.
		"--containerd-namespace=" + prefix + d.Name,
		"--containerd-plugins-namespace=" + prefix + d.Name + "-plugins",
	}
}

// launch starts dockerd on the daemon's dirs and waits until it answers.
func (d *Daemon) launch() error {
	bin, err := exec.LookPath("dockerd")
	if err != nil {
		return fmt.Errorf("finding dockerd: %w", err)
	}
	logFile, err := os.OpenFile(d.LogPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening the daemon's log: %w", err)
	}
	fmt.Fprintf(logFile, "==== %s: starting dockerd with %s\n", time.Now().Format(time.RFC3339Nano), d.Driver)
	// The reaper of a later run starts the daemon once more on these dirs, with the same driver.
	if err := os.WriteFile(d.path("driver"), []byte(d.Driver), 0o600); err != nil {
		logFile.Close()
		return fmt.Errorf("recording the storage driver: %w", err)
	}
	d.clearStaleContainerdPid()
	cmd := exec.Command(bin, d.flags()...)
	if d.Resolver != "" {
		resolvConf := d.path("resolv.conf")
		if err := os.WriteFile(resolvConf, []byte("nameserver "+d.Resolver+"\n"), 0o644); err != nil { //nolint:gosec // the containers' resolv.conf is made from it
			logFile.Close()
			return fmt.Errorf("writing the daemon's resolv.conf: %w", err)
		}
		// unshare and sh exec in turn, so that the process is dockerd itself (its pid, its signals).
		cmd = exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c",
			`mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolvConf, bin}, d.flags()...)...)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A group of its own: a Ctrl-C meant for the test reaches the daemon only through the test's cleanup, after
	// the agent using it has stopped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting dockerd: %w", err)
	}
	d.cmd, d.done = cmd, make(chan error, 1)
	go func(done chan<- error) { done <- cmd.Wait(); logFile.Close() }(d.done)

	deadline := time.Now().Add(readyWait)
	for {
		if _, err := d.Docker("version", "--format", "{{.Server.Version}}"); err == nil {
			return nil
		}
		select {
		case err := <-d.done:
			d.done <- err // Stop reads it again
			return fmt.Errorf("dockerd exited before it answered (%w); its log ends:\n%s", err, d.logEnd())
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dockerd did not answer within %s; its log ends:\n%s", readyWait, d.logEnd())
		}
	}
}

// logEnd is the last logTail lines of the daemon's log, or why it could not be read.
func (d *Daemon) logEnd() string {
	data, err := os.ReadFile(d.LogPath())
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-logTail):], "\n")
}

// Stop ends the daemon as its service manager would: SIGTERM, which stops its containers (none has a restart
// policy, so they stay stopped) and its containerd; SIGKILL if it takes longer than the grace.
func (d *Daemon) Stop() {
	if d.cmd == nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(stopGrace):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd = nil
	// A containerd outliving a killed dockerd would hold the exec-root.
	stopVerifiedPid(d.path("exec/containerd/containerd.pid"), d.Dir)
}

// Restart stops the daemon and starts it again on the same dirs, with the same options.
func (d *Daemon) Restart() error {
	d.Stop()
	return d.launch()
}

// CrashRestart kills dockerd with SIGKILL, as a crash or the OOM killer would, and starts it again on the same
// dirs. Its containerd goes with it, but the containers keep running in their shims until the new daemon,
// restoring without live-restore, stops them.
func (d *Daemon) CrashRestart() error {
	if err := d.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("killing dockerd: %w", err)
	}
	<-d.done
	d.cmd = nil
	return d.launch()
}

// clearStaleContainerdPid removes a containerd pid file left by a killed daemon: dockerd 20.10 trusts a pid it
// finds there and, if that pid is alive as anything (or a zombie), waits for a containerd that never answers.
func (d *Daemon) clearStaleContainerdPid() {
	pidFile := d.path("exec/containerd/containerd.pid")
	if verifiedPid(pidFile, d.Dir) == 0 {
		_ = os.Remove(pidFile)
	}
}

// Leftovers lists every container, network and volume on this daemon labelled with the node, as "kind name".
func (d *Daemon) Leftovers(node string) ([]string, error) {
	filter := "label=" + dsv1alpha1.LabelNode + "=" + node
	var found []string
	for _, ls := range [][]string{
		{"container", "ls", "-a", "--format", "{{.Names}}"},
		{"network", "ls", "--format", "{{.Name}}"},
		{"volume", "ls", "--format", "{{.Name}}"},
	} {
		out, err := d.Docker(append(ls, "--filter", filter)...)
		if err != nil {
			return nil, err
		}
		for _, name := range strings.Fields(out) {
			found = append(found, ls[0]+" "+name)
		}
	}
	return found, nil
}

// LoadImages copies images from the machine's daemon into this one: docker save | docker -H … load.
func (d *Daemon) LoadImages(images ...string) error {
	if len(images) == 0 {
		return nil
	}
	save := exec.Command("docker", append([]string{"save"}, images...)...)
	load := exec.Command("docker", "-H", d.Host(), "load")
	pipe, err := save.StdoutPipe()
	if err != nil {
		return fmt.Errorf("piping docker save: %w", err)
	}
	load.Stdin = pipe
	var saveErr, loadErr strings.Builder
	save.Stderr, load.Stderr = &saveErr, &loadErr
	if err := load.Start(); err != nil {
		return fmt.Errorf("starting docker load: %w", err)
	}
	if err := save.Run(); err != nil {
		_ = load.Wait()
		return fmt.Errorf("docker save: %w: %s", err, saveErr.String())
	}
	if err := load.Wait(); err != nil {
		return fmt.Errorf("docker load: %w: %s", err, loadErr.String())
	}
	return nil
}

// Remove stops the daemon and removes everything it had: its containers and networks, mounts left under its
// dirs, then the dirs. Read its log (LogPath) first if it is wanted.
func (d *Daemon) Remove() error {
	d.clear()
	d.Stop()
	return removeDir(d.Dir)
}

// clear removes every container and network the daemon holds, whoever made them: a network's bridge device
// lives in the host's namespace and outlives the data-root unless Docker removes the network itself.
func (d *Daemon) clear() {
	if d.cmd == nil {
		return
	}
	if ids, err := d.Docker("container", "ls", "-aq"); err == nil && ids != "" {
		_, _ = d.Docker(append([]string{"container", "rm", "-f"}, strings.Fields(ids)...)...)
	}
	_, _ = d.Docker("network", "prune", "-f")
}
