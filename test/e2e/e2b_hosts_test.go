//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/localcluster/pki"
)

// webTemplate is a template whose Sandboxes have a network address, so that their ports can be reached
// (a Sandbox of network mode None has none: docs/e2b.md, "Ports of a sandbox").
const webTemplate = `apiVersion: dockside.dev/v1alpha1
kind: SandboxTemplate
metadata: {name: web}
spec:
  sandbox:
    image: dockside.dev/busybox:local
    network: {mode: Isolated}
`

// selfSigned writes a certificate for *.domain and domain (and 127.0.0.1), issued by a CA of its own, and its
// key, and returns their files and a pool that trusts that CA: what docs/e2b.md's openssl command makes.
func selfSigned(domain string) (string, string, *x509.CertPool) {
	GinkgoHelper()
	ca, err := pki.NewCA("e2b test CA")
	Expect(err).NotTo(HaveOccurred())
	certPEM, keyPEM, err := ca.Issue(pki.Leaf{CommonName: domain, DNSNames: []string{"*." + domain, domain},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	Expect(err).NotTo(HaveOccurred())
	dir := GinkgoT().TempDir()
	Expect(pki.WriteFiles(dir, map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM})).To(Succeed())
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), pool
}

var _ = Describe("the E2B gateway's sandbox hosts", func() {
	It("serves a sandbox's port at <port>-<sandboxID>.<domain> over TLS, behind its traffic token", func() {
		const domain = "e2b.test"
		ns := newNamespace("e2b")
		apply(ns, e2bRole)
		apply(ns, webTemplate)
		key, err := kubectl("create", "token", "agent", "-n", ns, "--duration=1h")
		Expect(err).NotTo(HaveOccurred())
		certFile, keyFile, pool := selfSigned(domain)
		// Every name of the domain is loopback, as a wildcard DNS record would say; the certificate is checked
		// against the name asked for, as the SDK's client does.
		transport := &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				_, p, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				var d net.Dialer
				return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", p))
			},
		}
		DeferCleanup(transport.CloseIdleConnections)
		url := startGatewayOn(transport, "https", "--domain", domain, "--tls-cert-file", certFile, "--tls-key-file", keyFile)
		_, port, err := net.SplitHostPort(strings.TrimPrefix(url, "https://"))
		Expect(err).NotTo(HaveOccurred())
		c := e2bClient{url: url, key: strings.TrimSpace(key), transport: transport}

		code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "web", "timeout": 300, "secure": true, "network": map[string]any{"allowPublicTraffic": false}})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		var sb struct {
			SandboxID          string `json:"sandboxID"`
			TrafficAccessToken string `json:"trafficAccessToken"`
			Domain             string `json:"domain"`
		}
		Expect(json.Unmarshal(out, &sb)).To(Succeed())
		Expect(sb.TrafficAccessToken).NotTo(BeEmpty())
		Expect(sb.Domain).To(Equal(domain))
		DeferCleanup(func() {
			code, out := c.api(http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil)
			Expect(code).To(Equal(http.StatusNoContent), string(out))
			Eventually(func() []string { return heldInDocker(ns, sb.SandboxID) }).WithTimeout(90 * time.Second).Should(BeEmpty())
		})

		// host sends GET path to https://<host>.<domain>:<port>, as a client given E2B_DOMAIN does.
		host := func(label, path string, header http.Header) (int, string) {
			GinkgoHelper()
			hc := e2bClient{url: "https://" + label + "." + domain + ":" + port, transport: transport}
			code, out := hc.do(http.MethodGet, path, header, nil)
			return code, string(out)
		}
		withKey := func(kv ...string) http.Header {
			h := http.Header{"X-Access-Token": {c.key}}
			for i := 0; i+1 < len(kv); i += 2 {
				h.Set(kv[i], kv[i+1])
			}
			return h
		}

		// envd at its own host: the command starts a web server in the sandbox.
		events, end := c.start(sb.SandboxID, map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", "echo hello-port > /workspace/index.html && httpd -p 8080 -h /workspace"}}})
		Expect(end).NotTo(HaveKey("error"))
		Expect(events[len(events)-1]["event"]).To(HaveKeyWithValue("end", HaveKeyWithValue("exited", true)))
		code, body := host("49983-"+sb.SandboxID, "/envs", withKey())
		Expect(code).To(Equal(http.StatusOK), body)
		code, body = host("49983-"+sb.SandboxID, "/envs", http.Header{"X-Api-Key": {c.key}})
		Expect(code).To(Equal(http.StatusUnauthorized), "a secure sandbox's envd takes X-Access-Token only: "+body)

		code, body = host("8080-"+sb.SandboxID, "/index.html", withKey())
		Expect(code).To(Equal(http.StatusForbidden), body)
		Expect(body).To(ContainSubstring(`"code":403`))
		Eventually(func() (string, error) {
			code, body := host("8080-"+sb.SandboxID, "/index.html", withKey("E2b-Traffic-Access-Token", sb.TrafficAccessToken))
			if code != http.StatusOK {
				return "", &httpStatusError{code, body}
			}
			return body, nil
		}).WithTimeout(30 * time.Second).Should(Equal("hello-port\n"))

		code, body = host("8081-"+sb.SandboxID, "/", withKey("E2b-Traffic-Access-Token", sb.TrafficAccessToken))
		Expect(code).To(Equal(http.StatusBadGateway), body)
		Expect(body).To(ContainSubstring("The sandbox is running but port is not open"))
		code, body = host("8080-e2b-none", "/", withKey())
		Expect(code).To(Equal(http.StatusBadGateway), body)
		Expect(body).To(ContainSubstring("The sandbox was not found"))
		code, body = host("8080-"+sb.SandboxID, "/", nil)
		Expect(code).To(Equal(http.StatusUnauthorized), "no key, no port: "+body)
	})

	It("reaches a port a SandboxService declares at <port>-<sandboxID>.<domain>, and the primary's beside it", func() {
		const domain = "e2b.test"
		ns := newNamespace("e2b")
		apply(ns, e2bRole)
		apply(ns, `
apiVersion: dockside.dev/v1alpha1
kind: SandboxService
metadata: {name: side}
spec:
  image: dockside.dev/busybox:local
  command: ["sh", "-c", "echo hello-service > /tmp/index.html && exec httpd -f -p 8090 -h /tmp"]
  ports: [{name: http, port: 8090}]
  readiness:
    command: ["wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8090/"]
    periodSeconds: 1
    failureThreshold: 60
---
apiVersion: dockside.dev/v1alpha1
kind: SandboxTemplate
metadata: {name: websvc}
spec:
  sandbox:
    image: dockside.dev/busybox:local
    network: {mode: Isolated}
    services: [side]
`)
		key, err := kubectl("create", "token", "agent", "-n", ns, "--duration=1h")
		Expect(err).NotTo(HaveOccurred())
		// Plain HTTP with a domain: every name of it is loopback, as a wildcard DNS record would say.
		transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", p))
		}}
		DeferCleanup(transport.CloseIdleConnections)
		url := startGatewayOn(transport, "http", "--domain", domain)
		_, port, err := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
		Expect(err).NotTo(HaveOccurred())
		c := e2bClient{url: url, key: strings.TrimSpace(key), transport: transport}
		code, out := c.api(http.MethodPost, "/sandboxes", map[string]any{"templateID": "websvc", "timeout": 300})
		Expect(code).To(Equal(http.StatusCreated), string(out))
		var sb struct {
			SandboxID string `json:"sandboxID"`
		}
		Expect(json.Unmarshal(out, &sb)).To(Succeed())
		DeferCleanup(func() {
			code, out := c.api(http.MethodDelete, "/sandboxes/"+sb.SandboxID, nil)
			Expect(code).To(Equal(http.StatusNoContent), string(out))
			Eventually(func() []string { return heldInDocker(ns, sb.SandboxID) }).WithTimeout(90 * time.Second).Should(BeEmpty())
		})
		get := func(p int) (int, string) {
			GinkgoHelper()
			hc := e2bClient{url: fmt.Sprintf("http://%d-%s.%s:%s", p, sb.SandboxID, domain, port), transport: transport}
			code, out := hc.do(http.MethodGet, "/index.html", http.Header{"X-Access-Token": {c.key}}, nil)
			return code, string(out)
		}
		Eventually(func() (string, error) {
			code, body := get(8090)
			if code != http.StatusOK {
				return "", &httpStatusError{code, body}
			}
			return body, nil
		}).WithTimeout(60*time.Second).Should(Equal("hello-service\n"), "the service's port, declared in its spec.ports")

		// The primary's own port, which no service declares, is the primary's.
		events, end := c.start(sb.SandboxID, map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", "echo hello-primary > /workspace/index.html && httpd -p 8080 -h /workspace"}}})
		Expect(end).NotTo(HaveKey("error"))
		Expect(events[len(events)-1]["event"]).To(HaveKeyWithValue("end", HaveKeyWithValue("exited", true)))
		Eventually(func() (string, error) {
			code, body := get(8080)
			if code != http.StatusOK {
				return "", &httpStatusError{code, body}
			}
			return body, nil
		}).WithTimeout(30 * time.Second).Should(Equal("hello-primary\n"))
		for range 20 { // through the kept sessions, the service's and the primary's in turn
			code, body := get(8090)
			Expect(code).To(Equal(http.StatusOK), body)
			Expect(body).To(Equal("hello-service\n"))
			code, body = get(8080)
			Expect(code).To(Equal(http.StatusOK), body)
			Expect(body).To(Equal("hello-primary\n"))
		}
	})
})

// httpStatusError is an answer that was not the one waited for.
type httpStatusError struct {
	code int
	body string
}

func (e *httpStatusError) Error() string { return http.StatusText(e.code) + ": " + e.body }
