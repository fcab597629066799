package agent

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCheckMetricsServing(t *testing.T) {
	cases := map[string]struct {
		bind    string
		plain   bool
		refused bool
	}{
		"HTTPS on every address":   {bind: ":8443"},
		"HTTPS on one address":     {bind: "10.0.0.5:8443"},
		"plain on IPv4 loopback":   {bind: "127.0.0.1:8080", plain: true},
		"plain on 127/8":           {bind: "127.0.0.2:8080", plain: true},
		"plain on IPv6 loopback":   {bind: "[::1]:8080", plain: true},
		"plain, endpoint off":      {bind: "0", plain: true},
		"plain on every address":   {bind: ":8080", plain: true, refused: true},
		"plain on 0.0.0.0":         {bind: "0.0.0.0:8080", plain: true, refused: true},
		"plain on a host address":  {bind: "10.0.0.5:8080", plain: true, refused: true},
		"plain on a name":          {bind: "localhost:8080", plain: true, refused: true},
		"plain on no port":         {bind: "127.0.0.1", plain: true, refused: true},
		"plain on IPv6 everywhere": {bind: "[::]:8080", plain: true, refused: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkMetricsServing(&Options{MetricsBindAddress: c.bind, MetricsPlainHTTP: c.plain})
			if !c.refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(c.bind))
		})
	}
}

// The served options are what kubebuilder scaffolds: HTTPS behind the API server's authentication and
// authorization by default, plain HTTP (no filter) only when asked for.
func TestMetricsServing(t *testing.T) {
	g := NewWithT(t)
	secure := metricsServing(Options{MetricsBindAddress: ":8443", MetricsCertDir: "/certs", MetricsCertName: "c", MetricsKeyName: "k"})
	g.Expect(secure.SecureServing).To(BeTrue())
	g.Expect(secure.FilterProvider).NotTo(BeNil())
	g.Expect([]string{secure.BindAddress, secure.CertDir, secure.CertName, secure.KeyName}).To(Equal([]string{":8443", "/certs", "c", "k"}))
	plain := metricsServing(Options{MetricsBindAddress: "127.0.0.1:8080", MetricsPlainHTTP: true})
	g.Expect(plain.SecureServing).To(BeFalse())
	g.Expect(plain.FilterProvider).To(BeNil())
}
