package dataplane

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"testing/iotest"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Frames up to the cap pass whole, whatever the reads cut them into; the first longer one fails the read
// at its header, before its payload is read.
func TestSPDYFramesAreBounded(t *testing.T) {
	g := NewWithT(t)
	var wire bytes.Buffer
	dataFrame := func(payload []byte) { // stream 1, no flags, the length in the header's last 3 bytes
		n := len(payload)
		wire.Write([]byte{0, 0, 0, 1, 0, byte(n >> 16), byte(n >> 8), byte(n)})
		wire.Write(payload)
	}
	dataFrame([]byte("hello"))
	dataFrame(bytes.Repeat([]byte("a"), 32<<10))
	dataFrame(bytes.Repeat([]byte("b"), maxSPDYFrame))
	fits := bytes.Clone(wire.Bytes())
	got, err := io.ReadAll(boundSPDY(iotest.OneByteReader(bytes.NewReader(fits))))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(fits))

	dataFrame(bytes.Repeat([]byte("c"), maxSPDYFrame+1))
	got, err = io.ReadAll(boundSPDY(bytes.NewReader(wire.Bytes())))
	g.Expect(err).To(MatchError(errSPDYFrameTooLarge))
	g.Expect(len(got)).To(BeNumerically("<=", len(fits)+8), "nothing of the long frame's payload is passed on")
}

// client-go's SPDY executor passes 1 MiB of stdin in frames within the cap.
func TestSPDYExecCarriesStdinWithinTheCap(t *testing.T) {
	g := NewWithT(t)
	d, container := runningPrimary(t)
	d.SetStreamExecHandler(func(_ context.Context, _ string, req dd.StreamExecRequest) int {
		_, _ = io.Copy(req.Stdout, req.Stdin)
		return 0
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveExec(w, r, executor{driver: d}, container)
	}))
	defer srv.Close()
	u, err := url.Parse(srv.URL + "/exec?command=cat&stdin=true&stdout=true")
	g.Expect(err).NotTo(HaveOccurred())
	exec, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: srv.URL}, "POST", u)
	g.Expect(err).NotTo(HaveOccurred())
	in := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	var out bytes.Buffer
	g.Expect(exec.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdin: bytes.NewReader(in), Stdout: &out})).To(Succeed())
	g.Expect(out.Bytes()).To(Equal(in))
}
