//go:build integration

package dataplane_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// filesURL is the files call of Sandbox ns/name with query q, through the API server of cfg.
func filesURL(cfg *rest.Config, ns, name string, q url.Values) url.URL {
	base, _, err := rest.DefaultServerUrlFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	u := base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", name, "files")
	u.RawQuery = q.Encode()
	return *u
}

// slowReader gives its data in blocks, each after pause: a body that takes len/block*pause to send.
type slowReader struct {
	data  []byte
	block int
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	time.Sleep(s.pause)
	n := copy(p[:min(len(p), s.block)], s.data)
	s.data = s.data[n:]
	return n, nil
}

// slowWriter takes what it is given in blocks, each after pause.
type slowWriter struct {
	w     io.Writer
	block int
	pause time.Duration
}

func (s *slowWriter) Write(p []byte) (int, error) {
	for done := 0; done < len(p); {
		time.Sleep(s.pause)
		n, err := s.w.Write(p[done:min(len(p), done+s.block)])
		done += n
		if err != nil {
			return done, err
		}
	}
	return len(p), nil
}

var _ = Describe("files through the API server", Ordered, func() {
	var fiona, vera *rest.Config

	BeforeAll(func() {
		namespace("files-a")
		fiona = userConfig("fiona", "dockside-edit", "files-a")
		vera = userConfig("vera", "dockside-view", "files-a")
		runningSandbox("files-a", "box", "node-a", dsv1alpha1.LifecycleRunning)
		runningSandbox("files-a", "far", "node-b", dsv1alpha1.LifecycleRunning)
	})

	// Each body takes 32 pauses of 250 ms, 8 s: past the 5 s --request-timeout however fast the machine is.
	It("writes and reads a file sent slowly past the API server's request timeout, whole", func(ctx SpecContext) {
		data := make([]byte, 1<<20)
		_, _ = rand.Read(data)
		sum := sha256.Sum256(data)
		pause := 250 * time.Millisecond
		block := len(data) / 32
		for _, name := range []string{"box", "far"} { // far lives on node-b: node-a forwards the upgrade
			By("writing to " + name)
			start := time.Now()
			q := url.Values{"path": {"/workspace/slow.bin"}, "length": {"1048576"}}
			conn, err := filesclient.Dial(ctx, fiona, filesURL(fiona, "files-a", name, q), http.MethodPut)
			Expect(err).NotTo(HaveOccurred())
			Expect(filesclient.Send(conn, &slowReader{data: data, block: block, pause: pause})).To(Succeed())
			conn.Close()
			Expect(time.Since(start)).To(BeNumerically(">", requestTimeout))

			By("reading it back from " + name)
			start = time.Now()
			conn, err = filesclient.Dial(ctx, fiona, filesURL(fiona, "files-a", name, url.Values{"path": {"/workspace/slow.bin"}}), http.MethodGet)
			Expect(err).NotTo(HaveOccurred())
			var got bytes.Buffer
			Expect(filesclient.Outcome(conn, &slowWriter{w: &got, block: block, pause: pause})).To(Succeed())
			conn.Close()
			Expect(time.Since(start)).To(BeNumerically(">", requestTimeout))
			Expect(sha256.Sum256(got.Bytes())).To(Equal(sum))
		}
	})

	It("cuts a plain request at the request timeout, which is why bodies upgrade", func(ctx SpecContext) {
		hc, err := rest.HTTPClientFor(fiona)
		Expect(err).NotTo(HaveOccurred())
		u := filesURL(fiona, "files-a", "box", url.Values{"path": {"/workspace/plain.bin"}})
		body := &slowReader{data: make([]byte, 1<<20), block: 32 << 10, pause: 250 * time.Millisecond}
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), body)
		Expect(err).NotTo(HaveOccurred())
		req.ContentLength = 1 << 20
		resp, err := hc.Do(req)
		if err == nil {
			defer resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusGatewayTimeout))
		}
		stat := filesURL(fiona, "files-a", "box", url.Values{"op": {"stat"}, "path": {"/workspace/plain.bin"}})
		resp, err = hc.Get(stat.String())
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound), "nothing half-written")
	})

	It("refuses an upgrade in plain HTTP, with the reason", func(ctx SpecContext) {
		By("a viewer may not write")
		_, err := filesclient.Dial(ctx, vera, filesURL(vera, "files-a", "box", url.Values{"path": {"/workspace/x"}}), http.MethodPut)
		var se *fileswire.StatusError
		Expect(errors.As(err, &se)).To(BeTrue(), "a Status, not %v", err)
		Expect(se.Status.Code).To(BeEquivalentTo(http.StatusForbidden))
		By("the read-only root")
		_, err = filesclient.Dial(ctx, fiona, filesURL(fiona, "files-a", "box", url.Values{"path": {"/etc/x"}}), http.MethodPut)
		Expect(errors.As(err, &se)).To(BeTrue(), "a Status, not %v", err)
		Expect(se.Status.Code).To(BeEquivalentTo(http.StatusForbidden))
		Expect(se.Status.Message).To(HavePrefix("/etc/x is on the read-only root file system; write under /workspace"))
		By("a body larger than the workspace")
		q := url.Values{"path": {"/workspace/big"}, "length": {"1099511627776"}}
		_, err = filesclient.Dial(ctx, fiona, filesURL(fiona, "files-a", "box", q), http.MethodPut)
		Expect(errors.As(err, &se)).To(BeTrue(), "a Status, not %v", err)
		Expect(se.Status.Code).To(BeEquivalentTo(http.StatusInsufficientStorage))
	})
})
