package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
)

// Every request of one command carries the same traceparent: TRACEPARENT's when the caller set it, else a new
// trace's.
func TestRequestsCarryOneTraceparent(t *testing.T) {
	g := NewWithT(t)
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	send := func() {
		cfg := testConfig(t, srv.URL)
		hc, err := rest.HTTPClientFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		for range 2 {
			resp, err := hc.Get(srv.URL + "/apis")
			g.Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
		}
	}

	t.Setenv("TRACEPARENT", "")
	send()
	g.Expect(got).To(HaveLen(2))
	g.Expect(got[0]).To(MatchRegexp(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`))
	g.Expect(got[1]).To(Equal(got[0]), "one trace for the command's requests")

	given := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	t.Setenv("TRACEPARENT", given)
	got = nil
	send()
	g.Expect(got).To(Equal([]string{given, given}))
}

// testConfig is the rest.Config the plugin makes (kubeFlags.config) of a kubeconfig naming server, namespace
// team.
func testConfig(t *testing.T, server string) *rest.Config {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: team}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := (&kubeFlags{kubeconfig: kubeconfig}).config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
