//go:build integration

package dockerdriver_test

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Events", func() {
	// subscribe follows d's events for this spec and returns a function that waits for the next event of
	// the given type (and container, unless empty), skipping others.
	subscribe := func(ctx SpecContext, d dd.Driver) func(dd.EventType, string) dd.Event {
		sctx, cancel := context.WithCancel(ctx)
		DeferCleanup(cancel)
		events := d.Events(sctx)
		return func(typ dd.EventType, container string) dd.Event {
			GinkgoHelper()
			var got dd.Event
			Eventually(events).WithTimeout(20 * time.Second).Should(Receive(Satisfy(func(ev dd.Event) bool {
				got = ev
				return ev.Type == typ && (container == "" || ev.Container == container)
			})))
			return got
		}
	}

	It("reports start, pause, unpause, die with the exit code, and destroy, with the owner", func(ctx SpecContext) {
		next := subscribe(ctx, driver)
		o := newOwner("events")
		s := spec(o, dsv1alpha1.RoleService, "db", "sh", "-c", "sleep 2; exit 3")
		run(ctx, s)
		start := next(dd.EventStart, s.Name)
		Expect(start.Owner).To(Equal(o))
		Expect(start.Role).To(Equal(dsv1alpha1.RoleService))
		Expect(start.Service).To(Equal("db"))
		Expect(driver.PauseContainer(ctx, s.Name)).To(Succeed())
		next(dd.EventPause, s.Name)
		Expect(driver.UnpauseContainer(ctx, s.Name)).To(Succeed())
		next(dd.EventUnpause, s.Name)
		Expect(next(dd.EventDie, s.Name).ExitCode).To(Equal(3))
		Expect(driver.RemoveContainer(ctx, s.Name)).To(Succeed())
		next(dd.EventDestroy, s.Name)
	})

	// Docker learns of an OOM kill from the kernel through containerd, and on a loaded host that notice has once
	// not come at all (a CI run saw the die event, exit 137, and no oom event): a second attempt is allowed.
	It("reports an out-of-memory kill", FlakeAttempts(2), func(ctx SpecContext) {
		next := subscribe(ctx, driver)
		s := spec(newOwner("oom"), dsv1alpha1.RolePrimary, "", "awk", `BEGIN { s = "x"; while (1) s = s s }`)
		s.Resources.MemoryBytes = 16 << 20
		run(ctx, s)
		next(dd.EventOOM, s.Name)
		Expect(next(dd.EventDie, s.Name).ExitCode).To(Equal(137))
		info, err := driver.ObserveContainer(ctx, s.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.OOMKilled).To(BeTrue())
	})

	It("carries only this node's containers", func(ctx SpecContext) {
		next := subscribe(ctx, driver)
		other, err := dd.New(ctx, dd.Options{Node: node + "-other"})
		Expect(err).NotTo(HaveOccurred())
		foreign := spec(dd.Owner{Namespace: "itest", Name: "foreign", UID: randomHex(8)}, dsv1alpha1.RolePrimary, "")
		_, err = other.EnsureContainer(ctx, foreign)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { Expect(other.RemoveContainer(ctx, foreign.Name)).To(Succeed()) })
		Expect(other.StartContainer(ctx, foreign.Name)).To(Succeed())
		mine := spec(newOwner("mine"), dsv1alpha1.RolePrimary, "")
		run(ctx, mine)
		// The first start seen is ours, although the foreign one started first.
		Expect(next(dd.EventStart, "").Container).To(Equal(mine.Name))
	})

	It("survives a broken connection to the daemon: resubscribes and signals a resync", func(ctx SpecContext) {
		proxy := newCuttableProxy()
		DeferCleanup(proxy.close)
		viaProxy, err := dd.New(ctx, dd.Options{Node: node, Host: "tcp://" + proxy.addr()})
		Expect(err).NotTo(HaveOccurred())
		next := subscribe(ctx, viaProxy)
		o := newOwner("resync")
		before := spec(o, dsv1alpha1.RoleService, "before")
		run(ctx, before)
		next(dd.EventStart, before.Name) // the stream is connected through the proxy

		proxy.cut()
		next(dd.EventResync, "")
		after := spec(o, dsv1alpha1.RoleService, "after")
		run(ctx, after)
		next(dd.EventStart, after.Name)
	})
})

// cuttableProxy forwards TCP connections to the Docker socket and can sever all of them at once, which
// is what a daemon restart looks like to a client.
type cuttableProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCuttableProxy() *cuttableProxy {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &cuttableProxy{ln: ln}
	go p.serve(dockerSocket())
	return p
}

func dockerSocket() string {
	if h := os.Getenv("DOCKER_HOST"); strings.HasPrefix(h, "unix://") {
		return strings.TrimPrefix(h, "unix://")
	}
	return "/var/run/docker.sock"
}

func (p *cuttableProxy) addr() string { return p.ln.Addr().String() }

func (p *cuttableProxy) serve(socket string) {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("unix", socket)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

func (p *cuttableProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *cuttableProxy) close() {
	p.ln.Close()
	p.cut()
}
