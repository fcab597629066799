//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// No packet of these specs leaves the machine (docs/egress.md): the "internet" is an HTTP server of the test's
// own on the host's loopback, which the suite's agent permits with --egress-permit=127.0.0.1/32 (agent_test.go);
// forbidden destinations are 127.0.0.2 and addresses of containers the test made; names that must be refused
// are under .invalid, and the proxy refuses them before any lookup.

// proxyPort is the agent's default --egress-proxy-port, which the suite's agent keeps.
const proxyPort = "3128"

// egressClient is the Python program the specs run in Sandboxes: each command prints one JSON object.
//
//	get URL          urllib through the proxy of the environment (absolute-form http://)
//	tunnel HOST PORT http.client through a CONNECT tunnel, as pip and git reach https:// servers
//	connect TARGET   a bare CONNECT, whose refusal is read whole (http.client reports only its status line)
//	tcp HOST PORT    a raw TCP connect, no proxy
const egressClient = `
import http.client, json, os, socket, sys, urllib.error, urllib.parse, urllib.request

def out(**kw):
    print(json.dumps(kw))

def proxy():
    p = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
    return p.hostname, p.port

def get(url):
    # 127.0.0.1 is in NO_PROXY because in a sandbox it means the sandbox's own loopback; the test's "internet"
    # is the host's loopback, reached through the proxy, so this one command asks the proxy for every URL.
    os.environ.pop("no_proxy", None)
    os.environ.pop("NO_PROXY", None)
    try:
        r = urllib.request.urlopen(url, timeout=3)
    except urllib.error.HTTPError as e:
        r = e
    out(status=r.getcode(), refusal=r.headers.get("X-Dockside-Refusal", ""), body=r.read().decode())

def tunnel(host, port):
    c = http.client.HTTPConnection(*proxy(), timeout=3)
    c.set_tunnel(host, int(port))
    c.request("GET", "/")
    r = c.getresponse()
    out(status=r.status, body=r.read().decode())

def connect(target):
    s = socket.create_connection(proxy(), timeout=3)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    head, _, body = data.decode().partition("\r\n\r\n")
    lines = head.split("\r\n")
    headers = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
    out(status=int(lines[0].split()[1]), refusal=headers.get("X-Dockside-Refusal", ""), body=body)

def tcp(host, port):
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        out(connected=True)
    except OSError as e:
        out(connected=False, error=str(e))

{"get": get, "tunnel": tunnel, "connect": connect, "tcp": tcp}[sys.argv[1]](*sys.argv[2:])
`

// answer is what egressClient printed.
type answer struct {
	Status    int    `json:"status"`
	Refusal   string `json:"refusal"`
	Body      string `json:"body"`
	Connected bool   `json:"connected"`
	Error     string `json:"error"`
}

var _ = Describe("Network egress on real Docker: the egress proxy and the host firewall", Label("egress"), func() {
	It("lets an Isolated Sandbox reach what its allow list names through the proxy, by plain HTTP and CONNECT, and refuses the rest with a 403 and an Event", func() {
		ns := newNamespace("egress-allow")
		body := fmt.Sprintf("hello from the test's internet %d", time.Now().UnixNano())
		port := internet(body)
		apply(ns, fmt.Sprintf(`
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: client
spec:
  image: dockside.dev/python:local
  network:
    mode: Isolated
    allow: ["127.0.0.1:%d", "127.0.0.2:%d"]
`, port, port))
		DeferCleanup(deleteAllIn, ns)
		waitFor(ns, "sandbox/client", "condition=Ready", 2*time.Minute)
		primary := onlyContainer(ns, "client", dsv1alpha1.RolePrimary)

		By("the primary is told where the proxy is, and to reach its own loopback and name directly")
		gateway, bridge := bridgeOf(primary)
		Expect(bridge).To(HavePrefix(dd.BridgeProxied))
		env := envOf(primary)
		for _, name := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			Expect(env).To(ContainElement(name+"=http://"+gateway+":"+proxyPort), name)
		}
		Expect(env).To(ContainElement("NO_PROXY=localhost,127.0.0.1,::1,client"))

		target := fmt.Sprintf("127.0.0.1:%d", port)
		By("plain HTTP to an allowed host:port, from an Execution as a user runs it")
		out := plugin(egressClient, "-n", ns, "-i", "client", "--", "python3", "-", "get", "http://"+target+"/")
		Expect(out.code).To(Equal(0), out.stderr)
		Expect(decode(out.stdout)).To(Equal(answer{Status: 200, Body: body}))

		By("CONNECT to the same, as pip and git reach https:// servers")
		Expect(clientIn(primary, "tunnel", "127.0.0.1", strconv.Itoa(port))).To(Equal(answer{Status: 200, Body: body}))

		By("a name not on the list: 403 naming Dockside, before any lookup, by plain HTTP and CONNECT")
		for _, a := range []answer{clientIn(primary, "get", "http://not-allowed.invalid/"), clientIn(primary, "connect", "not-allowed.invalid:80")} {
			Expect(a.Status).To(Equal(http.StatusForbidden))
			Expect(a.Refusal).To(Equal("NotOnAllowlist"))
			Expect(a.Body).To(ContainSubstring("Dockside"))
			Expect(a.Body).To(ContainSubstring("not-allowed.invalid:80"))
		}
		By("an allowed host on a port the list does not name")
		a := clientIn(primary, "connect", fmt.Sprintf("127.0.0.1:%d", port+1))
		Expect([]any{a.Status, a.Refusal}).To(Equal([]any{http.StatusForbidden, "NotOnAllowlist"}), a.Body)

		By("the Sandbox is told in an Event")
		Eventually(func() (string, error) {
			return kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=client,reason=EgressRefused",
				"-o", "jsonpath={range .items[*]}{.type} {.message}{\"\\n\"}{end}")
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(MatchRegexp(`Warning egress to not-allowed\.invalid:80 refused \(NotOnAllowlist\)`))

		By("an address the list names but the node's policy forbids (loopback, outside --egress-permit)")
		forbidden := fmt.Sprintf("127.0.0.2:%d", port)
		for _, a := range []answer{clientIn(primary, "get", "http://"+forbidden+"/"), clientIn(primary, "connect", forbidden)} {
			Expect(a.Status).To(Equal(http.StatusForbidden))
			Expect(a.Refusal).To(Equal("ForbiddenAddress"))
			Expect(a.Body).To(ContainSubstring("Dockside"))
		}

		By("no IPv6 inside")
		Expect(docker("exec", primary, "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6")).To(Equal("1"))

		deleteAndExpectGone(ns, "client")
		Expect(namespaceLeftovers(ns)).To(BeEmpty())
	})

	It("lets no raw traffic out of an Isolated Sandbox: no route out, no server on another bridge, no other Isolated Sandbox, not even through the proxy", func() {
		ns := newNamespace("egress-raw")
		serverIP := serverContainer("egress-raw-" + node)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: a
spec:
  image: dockside.dev/python:local
  command: ["python3", "-m", "http.server", "8000", "--bind", "0.0.0.0", "--directory", "/workspace"]
  network: {mode: Isolated}
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: b
spec:
  image: dockside.dev/python:local
  network: {mode: Isolated}
`)
		DeferCleanup(deleteAllIn, ns)
		waitFor(ns, "sandbox/a", "jsonpath={.status.phase}=Running", 2*time.Minute)
		waitFor(ns, "sandbox/b", "condition=Ready", 2*time.Minute)
		a, b := onlyContainer(ns, "a", dsv1alpha1.RolePrimary), onlyContainer(ns, "b", dsv1alpha1.RolePrimary)

		By("no route out of the bridge")
		expectNoRouteOut(b)

		By("a server of the test's own on a network of its own answers the host, and not the Sandbox")
		Expect(clientIn(b, "tcp", serverIP, "8080")).To(HaveField("Connected", BeFalse()))

		By("A and B share the node's Isolated bridge, A serves, and B reaches A neither directly nor through the proxy")
		Expect(docker("inspect", "-f", "{{.HostConfig.NetworkMode}}", a)).To(Equal(dd.NodeIsolatedNetworkName(node)))
		Expect(docker("inspect", "-f", "{{.HostConfig.NetworkMode}}", b)).To(Equal(dd.NodeIsolatedNetworkName(node)))
		aIP := ipOf(a)
		Eventually(func() answer { return clientIn(a, "tcp", aIP, "8000") }).WithTimeout(time.Minute).WithPolling(time.Second).
			Should(HaveField("Connected", BeTrue()), "A's server answers A itself at A's address")
		Expect(clientIn(b, "tcp", aIP, "8000")).To(HaveField("Connected", BeFalse()))
		for _, r := range []answer{clientIn(b, "connect", aIP+":8000"), clientIn(b, "get", "http://"+aIP+":8000/")} {
			Expect([]any{r.Status, r.Refusal}).To(Equal([]any{http.StatusForbidden, "ForbiddenAddress"}), r.Body)
		}

		deleteAndExpectGone(ns, "a")
		deleteAndExpectGone(ns, "b")
		Expect(namespaceLeftovers(ns)).To(BeEmpty())
	})

	It("closes the host's ports to Sandboxes of every mode, except the proxy port to Isolated ones", func() {
		ns := newNamespace("egress-host")
		hostPort := hostListener()
		apply(ns, webService+`
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: iso
spec:
  image: dockside.dev/python:local
  network: {mode: Isolated}
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: none
spec:
  image: dockside.dev/python:local
  services: ["web"]
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: open
spec:
  image: dockside.dev/python:local
  network: {mode: Unrestricted}
`)
		DeferCleanup(deleteAllIn, ns)
		for _, name := range []string{"iso", "none", "open"} {
			waitFor(ns, "sandbox/"+name, "condition=Ready", 2*time.Minute)
		}

		By("the agent's table is installed")
		table, err := exec.Command("nft", "list", "table", "inet", "dockside").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(table))
		Expect(string(table)).To(ContainSubstring(`iifname "dsi-*" tcp dport ` + proxyPort + ` accept`))
		Expect(string(table)).To(MatchRegexp(`iifname "ds\*" counter packets \d+ bytes \d+ drop`))

		for _, c := range []struct{ name, prefix, proxy string }{
			{"iso", dd.BridgeProxied, "open"},
			{"none", dd.BridgeClosed, "closed"},
			{"open", dd.BridgeOpen, "closed"},
		} {
			By(fmt.Sprintf("%s: the host's port closed at its gateway, the proxy port %s", c.name, c.proxy))
			primary := onlyContainer(ns, c.name, dsv1alpha1.RolePrimary)
			gateway, bridge := bridgeOf(primary)
			Expect(bridge).To(HavePrefix(c.prefix))
			conn, err := net.DialTimeout("tcp", net.JoinHostPort(gateway, hostPort), 3*time.Second)
			Expect(err).NotTo(HaveOccurred(), "the host itself reaches its port at %s", gateway)
			conn.Close()
			Expect(clientIn(primary, "tcp", gateway, hostPort)).To(HaveField("Connected", BeFalse()))
			Expect(clientIn(primary, "tcp", gateway, proxyPort)).To(HaveField("Connected", Equal(c.proxy == "open")))
			Expect(docker("exec", primary, "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6")).To(Equal("1"))
		}

		for _, name := range []string{"iso", "none", "open"} {
			deleteAndExpectGone(ns, name)
		}
		_, err = kubectl("delete", "-n", ns, "sandboxservice", "web", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred())
		Expect(namespaceLeftovers(ns)).To(BeEmpty())
	})

	It("lets None with a service reach its service by name and nothing else: no proxy, no way to the host", func() {
		ns := newNamespace("egress-none")
		apply(ns, webService+`
---
apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata:
  name: none
spec:
  image: dockside.dev/python:local
  services: ["web"]
`)
		DeferCleanup(deleteAllIn, ns)
		waitFor(ns, "sandbox/none", "condition=Ready", 2*time.Minute)
		primary := onlyContainer(ns, "none", dsv1alpha1.RolePrimary)

		fetched, err := docker("exec", primary, "python3", "-c",
			`import urllib.request; print(urllib.request.urlopen("http://web:8080/", timeout=3).read().decode(), end="")`)
		Expect(err).NotTo(HaveOccurred())
		Expect(fetched).To(Equal("ok"))
		for _, v := range envOf(primary) {
			Expect(strings.ToUpper(v)).NotTo(HavePrefix("HTTP_PROXY="))
			Expect(strings.ToUpper(v)).NotTo(HavePrefix("HTTPS_PROXY="))
		}
		expectNoRouteOut(primary)
		gateway, bridge := bridgeOf(primary)
		Expect(bridge).To(HavePrefix(dd.BridgeClosed))
		Expect(clientIn(primary, "tcp", gateway, proxyPort)).To(HaveField("Connected", BeFalse()))

		deleteAndExpectGone(ns, "none")
		_, err = kubectl("delete", "-n", ns, "sandboxservice", "web", "--timeout=60s")
		Expect(err).NotTo(HaveOccurred())
		Expect(namespaceLeftovers(ns)).To(BeEmpty())
	})
})

// internet starts the spec's stand-in for a server on the internet, an HTTP server on the host's loopback
// answering body to every request, and returns its port.
func internet(body string) int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.Serve(l) }()
	DeferCleanup(srv.Close)
	return l.Addr().(*net.TCPAddr).Port
}

// hostListener listens on every address of the host, as any service of the host might, accepting and closing
// connections, and returns its port.
func hostListener() string {
	GinkgoHelper()
	l, err := net.Listen("tcp4", "0.0.0.0:0")
	Expect(err).NotTo(HaveOccurred())
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	DeferCleanup(l.Close)
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// serverContainer runs a busybox httpd, the test's own, on a Docker network the test creates, both labelled
// for the spec and removed at its end (checked), and returns the server's address once it answers the host.
func serverContainer(name string) string {
	GinkgoHelper()
	label := "e2e.dockside.dev/egress=" + name
	_, err := docker("network", "create", "--label", label, name)
	Expect(err).NotTo(HaveOccurred())
	_, err = docker("run", "-d", "--pull", "never", "--name", name, "--label", label, "--network", name,
		"dockside.dev/busybox:local", "sh", "-c", "echo ok > /tmp/index.html && exec httpd -f -p 8080 -h /tmp")
	DeferCleanup(func() {
		_, _ = docker("rm", "-f", name)
		_, _ = docker("network", "rm", name)
		Expect(docker("container", "ls", "-aq", "--filter", "label="+label)).To(BeEmpty())
		Expect(docker("network", "ls", "-q", "--filter", "label="+label)).To(BeEmpty())
	})
	Expect(err).NotTo(HaveOccurred())
	ip := ipOf(name)
	Eventually(func() (string, error) {
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Get("http://" + net.JoinHostPort(ip, "8080") + "/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal("ok\n"))
	return ip
}

// clientIn runs one command of egressClient in a container with docker exec and decodes its answer.
func clientIn(container string, args ...string) answer {
	GinkgoHelper()
	out, err := docker(append([]string{"exec", container, "python3", "-c", egressClient}, args...)...)
	Expect(err).NotTo(HaveOccurred())
	return decode(out)
}

// decode reads egressClient's answer, the last line it printed.
func decode(out string) answer {
	GinkgoHelper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var a answer
	Expect(json.Unmarshal([]byte(lines[len(lines)-1]), &a)).To(Succeed(), out)
	return a
}

// bridgeOf is the gateway address and the host interface name of a container's one network.
func bridgeOf(container string) (gateway, bridge string) {
	GinkgoHelper()
	network, err := docker("inspect", "-f", "{{.HostConfig.NetworkMode}}", container)
	Expect(err).NotTo(HaveOccurred())
	out, err := docker("network", "inspect", "-f",
		`{{range .IPAM.Config}}{{.Gateway}}{{end}} {{index .Options "com.docker.network.bridge.name"}}`, network)
	Expect(err).NotTo(HaveOccurred())
	gateway, bridge, _ = strings.Cut(out, " ")
	Expect(net.ParseIP(gateway)).NotTo(BeNil(), "gateway of network %s: %q", network, out)
	return gateway, bridge
}

// envOf is a container's environment as Docker recorded it, one NAME=value each.
func envOf(container string) []string {
	GinkgoHelper()
	out, err := docker("inspect", "-f", `{{range .Config.Env}}{{println .}}{{end}}`, container)
	Expect(err).NotTo(HaveOccurred())
	return strings.Split(out, "\n")
}

// expectNoRouteOut checks that a container on an internal bridge has no default route (destination 00000000 in
// /proc/net/route). Docker before 25 gave containers on internal networks one, via the bridge's gateway
// (moby PR #46603 took it away): there it must be that one and no other. The gateway is an address of the
// host, where the host firewall drops what is not the proxy, and Docker's rules for internal networks forward
// nothing off the bridge; the specs' raw connects show that such traffic goes nowhere.
func expectNoRouteOut(container string) {
	GinkgoHelper()
	routes, err := docker("exec", container, "cat", "/proc/net/route")
	Expect(err).NotTo(HaveOccurred())
	var defaults []string // the gateway field of each default route, little-endian hex as the kernel prints it
	for _, line := range strings.Split(routes, "\n")[1:] {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "00000000" {
			defaults = append(defaults, f[2])
		}
	}
	version, err := docker("version", "--format", "{{.Server.Version}}")
	Expect(err).NotTo(HaveOccurred())
	major, err := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	Expect(err).NotTo(HaveOccurred(), "Docker version %q", version)
	if major >= 25 {
		Expect(defaults).To(BeEmpty(), routes)
		return
	}
	gateway, _ := bridgeOf(container)
	ip := net.ParseIP(gateway).To4()
	Expect(defaults).To(ConsistOf(fmt.Sprintf("%02X%02X%02X%02X", ip[3], ip[2], ip[1], ip[0])),
		"on Docker %s, the one default route is via the bridge's own gateway:\n%s", version, routes)
}

// deleteAllIn deletes what a spec made in ns when it ended early; a spec that passed has deleted it already.
func deleteAllIn(ns string) {
	_, _ = kubectl("delete", "sandboxes,sandboxservices", "--all", "-n", ns, "--timeout=120s")
}
