package e2b

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// sandboxReads counts the fake API server's reads of Sandbox name.
func sandboxReads(d *dialed, name string) int {
	n := 0
	for _, c := range *d.api {
		if strings.HasPrefix(c, "GET "+sandboxes+name+"?") {
			n++
		}
	}
	return n
}

// withFixture serves Sandbox name with uid from the fake API server until the test ends.
func withFixture(t *testing.T, name, uid string) {
	t.Helper()
	fixtures[name] = strings.Replace(sandboxJSON(name, `{}`, ""), `"name":"`+name+`"`, `"name":"`+name+`","uid":"`+uid+`"`, 1)
	t.Cleanup(func() { delete(fixtures, name) })
}

func TestRequestsToAPortShareOneSessionAndOneSandboxRead(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	for i := range 20 {
		code, body := get(t, gw.URL, "8080-web.e2b.local", fmt.Sprintf("/%d", i), map[string]string{"X-Access-Token": "key-a"})
		g.Expect(code).To(Equal(http.StatusOK), body)
	}
	g.Expect(d.opened()).To(HaveLen(1), "one port-forward session for all of them")
	g.Expect(len(d.all())).To(BeNumerically("<", 20), "keep-alive connections are reused: fewer stream pairs than requests")
	g.Expect(sandboxReads(d, "web")).To(Equal(1), "the Sandbox is read once within its TTL")

	d.advance(sandboxTTL)
	code, _ := get(t, gw.URL, "8080-web.e2b.local", "/", map[string]string{"X-Access-Token": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(sandboxReads(d, "web")).To(Equal(2), "read again once the TTL passed")
	g.Expect(d.opened()).To(HaveLen(1), "the same Sandbox keeps its session")

	code, _ = get(t, gw.URL, "8081-web.e2b.local", "/", map[string]string{"X-Access-Token": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(d.opened()).To(HaveLen(2), "another port is another entry")
}

func TestARebuiltOrDeletedSandboxEndsItsSessions(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	withFixture(t, "phoenix", "uid-1")
	hdr := map[string]string{"X-Access-Token": "key-a"}
	code, _ := get(t, gw.URL, "8080-phoenix.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusOK))
	first := d.opened()[0]

	withFixture(t, "phoenix", "uid-2") // deleted and made again under the same name
	d.advance(sandboxTTL)
	code, _ = get(t, gw.URL, "8080-phoenix.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(first.ended()).To(BeTrue(), "the old Sandbox's session is closed as soon as the new UID is read")
	g.Expect(d.opened()).To(HaveLen(2))
	second := d.opened()[1]

	delete(fixtures, "phoenix")
	d.advance(sandboxTTL)
	code, body := get(t, gw.URL, "8080-phoenix.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusBadGateway), body)
	g.Expect(second.ended()).To(BeTrue(), "a Sandbox gone ends its sessions")
}

func TestASessionTheServerEndedOrThatAgedIsReplaced(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	hdr := map[string]string{"X-Access-Token": "key-a"}
	code, _ := get(t, gw.URL, "8080-web.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(d.opened()[0].Close()).To(Succeed()) // the data plane cut it: its container went
	g.Eventually(func() int {
		code, _ := get(t, gw.URL, "8080-web.e2b.local", "/", hdr)
		g.Expect(code).To(Equal(http.StatusOK))
		return len(d.opened())
	}).Should(Equal(2), "the next request opens a session")

	d.advance(sessionAge)
	code, _ = get(t, gw.URL, "8080-web.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(d.opened()).To(HaveLen(3), "a session takes new connections for sessionAge only")
	g.Eventually(d.opened()[1].ended).Should(BeTrue(), "the aged session closes once its connections did")
}

func TestThePoolIsBounded(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	hdr := map[string]string{"X-Access-Token": "key-a"}
	for port := 1000; port <= 1000+maxPortEntries; port++ {
		d.advance(time.Millisecond) // an order of use
		code, _ := get(t, gw.URL, fmt.Sprintf("%d-web.e2b.local", port), "/", hdr)
		g.Expect(code).To(Equal(http.StatusOK))
	}
	s := d.opened()
	g.Expect(s).To(HaveLen(maxPortEntries + 1))
	g.Eventually(s[0].ended).Should(BeTrue(), "the least recently used entry went")
	g.Expect(s[1].ended()).To(BeFalse())

	d.advance(portIdle)
	code, _ := get(t, gw.URL, "1000-web.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Eventually(s[maxPortEntries].ended).Should(BeTrue(), "entries unused for portIdle go")
}

func TestKillEndsASandboxsSessions(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	code, _ := get(t, gw.URL, "8080-web.e2b.local", "/", map[string]string{"X-Access-Token": "key-a"})
	g.Expect(code).To(Equal(http.StatusOK))
	req, err := http.NewRequest(http.MethodDelete, gw.URL+"/sandboxes/web", nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-API-Key", "key-a")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(d.opened()[0].ended()).To(BeTrue(), "killed through this gateway: its sessions end at once")
}

func TestAPortAServiceDeclaresReachesThatService(t *testing.T) {
	g := NewWithT(t)
	app, _ := echoApp(t)
	gw, d := hostGateway(t, app)
	hdr := map[string]string{"X-Access-Token": "key-a"}
	for _, port := range []int{6379, 8080, 5353, 3000} {
		code, body := get(t, gw.URL, fmt.Sprintf("%d-withdb.e2b.local", port), "/", hdr)
		g.Expect(code).To(Equal(http.StatusOK), body)
	}
	g.Expect(d.all()).To(Equal([]string{
		"ns-a/withdb/db:6379", // db comes before cache in spec.services; the gone one is skipped
		"ns-a/withdb/db:8080", // a service's port, though the primary might listen there too
		"ns-a/withdb:5353",    // declared UDP only: a forward carries TCP
		"ns-a/withdb:3000",    // declared by no service: the primary's
	}))
	g.Expect(d.opened()).To(HaveLen(4), "a service's port is an entry of its own")

	code, _ := get(t, gw.URL, "6379-web.e2b.local", "/", hdr)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(d.all()).To(ContainElement("ns-a/web:6379"), "a Sandbox without services: its primary")
	reads := 0
	for _, c := range *d.api {
		if strings.HasPrefix(c, "GET "+services) {
			reads++
		}
	}
	g.Expect(reads).To(Equal(3), "the services are read once within the TTL, for the Sandbox that names them")
}
