//go:build e2e

package e2e

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/test/internal/owndockerd"
)

// ownDaemon is a Docker daemon the spec starts, owns and stops (test/internal/owndockerd), so that a spec may
// restart or kill a Docker daemon, or run a fleet of them, without touching the machine's own one. Its methods
// here turn the package's errors into the spec's failures.
type ownDaemon struct{ *owndockerd.Daemon }

// ownDaemonImages are the images the specs run on an own daemon, loaded from the machine's daemon (never
// pulled).
var ownDaemonImages = []string{"dockside.dev/busybox:local", "dockside.dev/holder:local"}

// startDockerd starts an own daemon named name (a few letters) with the suite's images loaded, and registers
// its removal. A daemon left by a crashed run is stopped and removed first.
func startDockerd(name string) *ownDaemon {
	GinkgoHelper()
	return startDockerdResolving(name, "")
}

// startDockerdResolving is startDockerd with a daemon that sees resolver as the host's only nameserver
// (owndockerd.StartResolving); "" leaves the host's.
func startDockerdResolving(name, resolver string) *ownDaemon {
	GinkgoHelper()
	Expect(owndockerd.ReapLeftovers(GinkgoWriter.Printf)).To(Succeed())
	d, err := owndockerd.StartResolving(name, resolver, ownDaemonImages...)
	Expect(err).NotTo(HaveOccurred())
	own := &ownDaemon{d}
	DeferCleanup(own.remove)
	GinkgoWriter.Printf("own Docker daemon %s up at %s with %s\n", name, d.Host(), d.Driver)
	return own
}

// docker runs the Docker CLI against this daemon.
func (d *ownDaemon) docker(args ...string) (string, error) { return d.Docker(args...) }

// stop ends the daemon as its service manager would (SIGTERM, SIGKILL after a grace).
func (d *ownDaemon) stop() { d.Stop() }

// restart stops the daemon and starts it again on the same dirs, with the same options.
func (d *ownDaemon) restart() {
	GinkgoHelper()
	Expect(d.Restart()).To(Succeed())
}

// crashRestart kills dockerd with SIGKILL, as a crash would, and starts it again on the same dirs.
func (d *ownDaemon) crashRestart() {
	GinkgoHelper()
	Expect(d.CrashRestart()).To(Succeed())
}

// leftovers lists every container, network and volume on this daemon labelled with the node, as "kind name".
func (d *ownDaemon) leftovers(node string) []string {
	GinkgoHelper()
	found, err := d.Leftovers(node)
	Expect(err).NotTo(HaveOccurred())
	return found
}

// remove removes the daemon and everything it had; on a failed spec it prints the daemon's log first.
func (d *ownDaemon) remove() {
	if CurrentSpecReport().Failed() {
		if data, err := os.ReadFile(d.LogPath()); err == nil {
			GinkgoWriter.Printf("---- dockerd %s log ----\n%s\n", d.Name, data)
		}
	}
	Expect(d.Remove()).To(Succeed())
}

// startOwnAgent starts a second agent process, for node, on the own daemon d and against the suite's control
// plane, and registers its stop (which runs before the daemon's removal). Sandboxes reach it by spec.nodeName.
// topologyPool must be a range no other agent on this machine uses (owndockerd's AgentFlags say why). It has no
// host firewall and no egress proxy. Extra flags (a --capacity, say) come last and override these.
func startOwnAgent(d *ownDaemon, node, topologyPool string, extra ...string) *agentProcess {
	GinkgoHelper()
	a, err := startAgent(node, cp.Kubeconfig, filepath.Join(GinkgoT().TempDir(), "agent-"+node+".log"),
		append(d.AgentFlags(topologyPool), extra...)...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(a.stop)
	return a
}
