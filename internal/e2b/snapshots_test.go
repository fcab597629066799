package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// A snapshot is answered as E2B's SDKs read it: snapshotID, and names as a list, empty when none was given.
func TestSnapshotInfoHasTheSDKsShape(t *testing.T) {
	g := NewWithT(t)
	cp := &dsv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Name: "e2b-snap-x", Labels: map[string]string{LabelSnapshotOf: "e2b-a"}}}
	data, err := json.Marshal(infoOf(cp))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(MatchJSON(`{"snapshotID":"e2b-snap-x","names":[]}`))
	cp.Labels[LabelSnapshotName] = "after-install"
	data, err = json.Marshal(infoOf(cp))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(MatchJSON(`{"snapshotID":"e2b-snap-x","names":["after-install"]}`))
}

// A snapshot call that cannot be served is refused in E2B's shape before any Checkpoint is made: a body that
// is not JSON, a name that cannot be a label, a sandbox that is not there or was not made by the gateway (no
// template to restore it on).
func TestSnapshotRefusalsMakeNoCheckpoint(t *testing.T) {
	g := NewWithT(t)
	api, seen := fakeAPI(t)
	gw := httptest.NewServer(newTestGateway(t, api.URL))
	defer gw.Close()
	for _, c := range []struct {
		sandbox, body string
		code          int
		says          string
	}{
		{"web", `{"name":`, http.StatusBadRequest, "not the JSON"},
		{"web", `{"name":"not a label!"}`, http.StatusBadRequest, "name \"not a label!\""},
		{"gone", `{}`, http.StatusNotFound, "sandbox \"gone\" not found"},
		{"web", `{}`, http.StatusBadRequest, "not made through the E2B gateway"},
	} {
		req, _ := http.NewRequest(http.MethodPost, gw.URL+"/sandboxes/"+c.sandbox+"/snapshots", strings.NewReader(c.body))
		req.Header.Set("X-API-Key", "key-a")
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		var e apiError
		g.Expect(json.NewDecoder(resp.Body).Decode(&e)).To(Succeed())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(c.code), c.body)
		g.Expect(e.Code).To(Equal(c.code))
		g.Expect(e.Message).To(ContainSubstring(c.says), c.body)
	}
	for _, s := range *seen {
		g.Expect(s).NotTo(ContainSubstring("checkpoints"), "no Checkpoint was made or read")
	}
}
