package unavailableapi

import (
	"io"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// The first n calls under the prefix are answered as the aggregator does; calls elsewhere, and those after
// the n, reach next.
func TestRefusesTheFirstCallsUnderThePrefix(t *testing.T) {
	g := NewWithT(t)
	s := Start(t, DataPlane, 2, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "served")
	}))
	var got []string
	for _, path := range []string{"/api/v1/pods", DataPlane + "a", DataPlane + "b", DataPlane + "c", "/version"} {
		resp, err := http.Get(s.URL + path)
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, resp.Status+" "+string(body))
	}
	refused := "503 Service Unavailable service unavailable\n"
	g.Expect(got).To(Equal([]string{"200 OK served", refused, refused, "200 OK served", "200 OK served"}))
	g.Expect([]int{s.Calls(), s.Refused()}).To(Equal([]int{5, 2}))
}
