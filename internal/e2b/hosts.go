package e2b

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/dataplane/forwardclient"
)

// What host routing reads and writes (docs/e2b.md, "Ports of a sandbox").
const (
	// AnnotationTrafficToken holds the traffic access token of a Sandbox created with
	// network.allowPublicTraffic false: its ports answer only requests that carry it.
	AnnotationTrafficToken = "e2b.dockside.dev/traffic-access-token"
	// AnnotationSecure marks a Sandbox created secure: its envd takes the key only as X-Access-Token.
	AnnotationSecure = "e2b.dockside.dev/secure"
	// trafficTokenHeader is the header E2B's SDKs and proxy carry the traffic access token in.
	trafficTokenHeader = "E2b-Traffic-Access-Token"
)

// envdPortNumber is envdPort as a number.
const envdPortNumber = 49983

// sandboxHost reads a Host of E2B's form <port>-<sandboxID>.<domain> (Sandbox.get_host). ok is false for a
// host that is not of that form under the gateway's domain (the control plane's own, api.<domain>, or any
// host without a domain), which the gateway serves as before; err is set for a host of that form that names
// no port or no sandbox name.
func (g *Gateway) sandboxHost(host string) (port int, id string, ok bool, err error) {
	if g.domain == "" {
		return 0, "", false, nil
	}
	if h, _, splitErr := net.SplitHostPort(host); splitErr == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	label, under := strings.CutSuffix(host, "."+g.domain)
	if !under {
		return 0, "", false, nil
	}
	p, id, dash := strings.Cut(label, "-")
	if !dash || p == "" || strings.Trim(p, "0123456789") != "" {
		return 0, "", false, nil
	}
	port, convErr := strconv.Atoi(p)
	switch {
	case convErr != nil || port < 1 || port > 65535:
		return 0, "", true, errorf(http.StatusBadRequest, "host %q names no port (1 to 65535): E2B's sandbox hosts are <port>-<sandboxID>.%s", host, g.domain)
	case len(validation.IsDNS1123Label(id)) > 0:
		return 0, "", true, errorf(http.StatusBadRequest, "host %q names no sandbox: E2B's sandbox hosts are <port>-<sandboxID>.%s, the sandbox ID one DNS label", host, g.domain)
	}
	return port, id, true, nil
}

type hostSandboxKey struct{}

// headerPort reads the E2b-Sandbox-Port header, which E2B's proxy also routes by, with E2b-Sandbox-Id, when
// one URL serves every sandbox: ok is false without both headers, err is set for a port that is no port.
func headerPort(r *http.Request) (port int, id string, ok bool, err error) {
	p, id := r.Header.Get("E2b-Sandbox-Port"), r.Header.Get("E2b-Sandbox-Id")
	if p == "" || id == "" {
		return 0, "", false, nil
	}
	port, convErr := strconv.Atoi(p)
	if convErr != nil || port < 1 || port > 65535 {
		return 0, "", true, errorf(http.StatusBadRequest, "E2b-Sandbox-Port %q is not a port (1 to 65535)", p)
	}
	return port, id, true, nil
}

// routeHost serves a request by its host when the host names a sandbox's port (or, on any other host, by
// the E2b-Sandbox-Id and E2b-Sandbox-Port headers): envd's port goes to the gateway's own envd, the code
// interpreter's to the gateway's interpreter (interpreter.go), any other to the Sandbox's port through the data
// plane. It says whether it served.
func (g *Gateway) routeHost(w http.ResponseWriter, r *http.Request) bool {
	port, id, ok, err := g.sandboxHost(r.Host)
	if !ok {
		port, id, ok, err = headerPort(r)
	}
	switch {
	case !ok:
		return false
	case err != nil:
		writeError(w, err)
	case port == envdPortNumber:
		g.envd.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), hostSandboxKey{}, id)))
	case port == interpreterPort:
		g.serveInterpreter(w, r, id)
	default:
		g.proxyPort(w, r, id, port)
	}
	return true
}

// proxyError is the answer of E2B's proxy when it cannot reach a sandbox's port: E2B's {code, message} with
// the sandbox and the port.
type proxyError struct {
	Code      int    `json:"code"`
	Message   string `json:"message"`
	SandboxID string `json:"sandboxId"`
	Port      int    `json:"port,omitempty"`
}

func writeProxyError(w http.ResponseWriter, e proxyError) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	writeJSON(w, e.Code, e)
}

// portKeyOf is the caller's key on a request for a sandbox's port: X-Access-Token (the envdAccessToken, as
// E2B's SDKs send it to every host of a sandbox) or X-API-Key. Authorization is the application's own, and
// passes through.
func portKeyOf(r *http.Request) string {
	if v := r.Header.Get("X-Access-Token"); v != "" {
		return v
	}
	return r.Header.Get("X-API-Key")
}

// portCaller is the caller of a request for port of sandbox id, and that Sandbox: the caller's key decides,
// through RBAC on what it then asks of the data plane, whether it may reach the port; a Sandbox created with
// a traffic access token also needs that token. ok is false once the request was refused and answered.
func (g *Gateway) portCaller(w http.ResponseWriter, r *http.Request, id string, port int) (*caller, *dsv1alpha1.Sandbox, bool) {
	ctx := r.Context()
	key := portKeyOf(r)
	if key == "" {
		writeError(w, errorf(http.StatusUnauthorized, "missing key: a sandbox's ports take a Kubernetes token as X-Access-Token or X-API-Key (docs/e2b.md, \"Ports of a sandbox\")"))
		return nil, nil, false
	}
	c, err := g.ids.resolve(ctx, key)
	if err != nil {
		writeError(w, err)
		return nil, nil, false
	}
	sbx, err := g.ports.sandbox(ctx, c, id)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Code == http.StatusNotFound:
		writeProxyError(w, proxyError{Code: http.StatusBadGateway, Message: "The sandbox was not found", SandboxID: id})
		return nil, nil, false
	case err != nil:
		writeError(w, err)
		return nil, nil, false
	}
	if want := sbx.Annotations[AnnotationTrafficToken]; want != "" {
		got := r.Header.Get(trafficTokenHeader)
		if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			what := "is missing"
			if got != "" {
				what = "is not this sandbox's"
			}
			writeError(w, errorf(http.StatusForbidden, "the traffic access token (header %s) %s: sandbox %q was created with network.allowPublicTraffic false", trafficTokenHeader, what, id))
			return nil, nil, false
		}
	}
	if sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused {
		writeProxyError(w, proxyError{Code: http.StatusBadGateway, Message: "The sandbox is paused: resume it to reach its ports", SandboxID: id, Port: port})
		return nil, nil, false
	}
	return c, sbx, true
}

// proxyPort serves a request for port of sandbox id, from a caller portCaller lets through: the request,
// less the gateway's headers, goes to the port of the primary, or of the service that declares it
// (serviceports.go), over the caller's kept port-forward session (portpool.go), WebSocket upgrades included.
func (g *Gateway) proxyPort(w http.ResponseWriter, r *http.Request, id string, port int) {
	c, sbx, ok := g.portCaller(w, r, id, port)
	if !ok {
		return
	}
	service, err := g.ports.serviceOf(r.Context(), c, sbx, port)
	if err != nil {
		writeError(w, err)
		return
	}
	transport := g.ports.transport(c, sbx, service, port)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = net.JoinHostPort(id, strconv.Itoa(port))
			pr.Out.Host = pr.In.Host // the application sees the host it was asked for, as behind E2B's proxy
			pr.SetXForwarded()
			// The caller's key is a Kubernetes credential: the sandbox's own code never sees it.
			for _, h := range []string{"X-Access-Token", "X-API-Key", trafficTokenHeader, "E2b-Sandbox-Id", "E2b-Sandbox-Port"} {
				pr.Out.Header.Del(h)
			}
		},
		Transport:     transport,
		FlushInterval: -1, // streamed answers (server-sent events, chunks) go on as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			e := proxyError{Code: http.StatusBadGateway, SandboxID: id, Port: port}
			switch {
			case r.Context().Err() != nil:
				return // the client went away: there is no one to answer
			case forwardclient.IsPortError(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
				e.Message = "The sandbox is running but port is not open"
			default:
				e.Message = fmt.Sprintf("The sandbox's port could not be reached: %v", err)
			}
			writeProxyError(w, e)
		},
	}
	proxy.ServeHTTP(w, r)
}

// newTrafficToken is a traffic access token: 32 random bytes, hex.
func newTrafficToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a traffic access token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// secureRefusal refuses an envd call to a Sandbox created secure whose key did not come as X-Access-Token:
// E2B's envd of a secure sandbox takes only its access token there. Other Sandboxes are not read.
func secureRefusal(ctx context.Context, c *caller, call envdCall) error {
	if call.accessToken {
		return nil
	}
	sbx, err := sandboxOf(ctx, c, call.sandbox)
	if err != nil {
		return err
	}
	if sbx.Annotations[AnnotationSecure] == "true" {
		return errorf(http.StatusUnauthorized, "sandbox %q was created secure: send its envdAccessToken as X-Access-Token", call.sandbox)
	}
	return nil
}
