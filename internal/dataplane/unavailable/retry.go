// Package unavailable retries the data plane calls that kube-apiserver's aggregator answered unavailable
// without forwarding them (docs/design/dataplane.md): the kubectl plugin and the E2B gateway send theirs
// through it.
package unavailable

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/streaming/pkg/httpstream"
)

// kube-apiserver's aggregator answers a call to the data plane 503 "service unavailable" itself, without
// forwarding it, while one of its discovery checks of the APIService went unanswered (docs/status.md). Nothing
// reached an agent then, so the call is sent again, whatever it does, a few times over about ten seconds;
// then its answer stands. Any other 503 (the agent's own, a proxy that failed part way) is not retried: that
// call may have reached an agent, and may have run a command.

// dataPlanePath is the start of the aggregated data plane's paths (docs/design/dataplane.md).
const dataPlanePath = "/apis/subresources.dockside.dev/"

// aggregatorUnavailable is the aggregator's whole answer (http.Error's, text/plain), in its handler_proxy.go.
const aggregatorUnavailable = "service unavailable"

// upgradeUnavailable ends client-go's error for a WebSocket handshake the aggregator answered so
// (transport/websocket's RoundTrip, which returns an error rather than the response).
const upgradeUnavailable = "(503 Service Unavailable): " + aggregatorUnavailable

// Waits are the waits before each new try: 7.5 s in all (a variable, so that tests can shorten them).
var Waits = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// Retrying sends a data plane call again while the aggregator answers it unavailable.
func Retrying(next http.RoundTripper) http.RoundTripper {
	return &unavailableRetry{next: next, waits: Waits}
}

type unavailableRetry struct {
	next  http.RoundTripper
	waits []time.Duration
}

func (t *unavailableRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	// A body that cannot be had again is not sent twice; nor is a SPDY upgrade (Upgrade: SPDY/3.1), which
	// exec and port-forward try only after their WebSocket, retried already, failed: a retried SPDY dial
	// would leave its first connection open.
	resendable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if !strings.Contains(req.URL.Path, dataPlanePath) || !resendable || req.Header.Get("Upgrade") != "" {
		return t.next.RoundTrip(req) //nolint:wrapcheck // a transport passes its own on
	}
	for try := 0; ; try++ {
		// A clone each time: client-go's WebSocket transport changes the request it is given.
		r := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err //nolint:wrapcheck // the request's own
			}
			r.Body = body
		}
		resp, err := t.next.RoundTrip(r)
		if !unavailable(resp, err) {
			return resp, err //nolint:wrapcheck // a transport passes its own on
		}
		if try == len(t.waits) {
			return t.gaveUp(resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err() //nolint:wrapcheck // the caller's own
		case <-time.After(t.waits[try]):
		}
	}
}

// gaveUp is the last answer of the aggregator's, said clearly: an error, or the 503's body.
func (t *unavailableRetry) gaveUp(resp *http.Response, err error) (*http.Response, error) {
	var waited time.Duration
	for _, w := range t.waits {
		waited += w
	}
	msg := fmt.Sprintf("the API server's aggregator answered %q %d times over %s: it holds the data plane's APIService "+
		"v1alpha1.subresources.dockside.dev unavailable (kubectl get apiservice v1alpha1.subresources.dockside.dev says why)",
		aggregatorUnavailable, len(t.waits)+1, waited)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", msg, err)
	}
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(msg))
	resp.ContentLength = int64(len(msg))
	return resp, nil
}

// unavailable says whether a call's answer is the aggregator's 503; a response whose body it read to tell is
// given that body back.
func unavailable(resp *http.Response, err error) bool {
	var up *httpstream.UpgradeFailureError
	if err != nil {
		return errors.As(err, &up) && strings.HasSuffix(err.Error(), upgradeUnavailable)
	}
	if resp.StatusCode != http.StatusServiceUnavailable {
		return false
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if strings.TrimSpace(string(head)) == aggregatorUnavailable {
		return true
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return false
}
