package e2b

import (
	"context"
	"errors"
	"net/http"
	"path"

	"connectrpc.com/connect"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
)

// envdCall is what an envd request carries besides its body: the caller's key, whether it came as
// X-Access-Token (envd's access token), and the sandbox it is for.
type envdCall struct {
	key         string
	accessToken bool
	sandbox     string
}

type envdKey struct{}

// withEnvd records the key and the sandbox of an envd request in its context: the sandbox from the host
// (49983-<sandboxID>.<domain>, E2B_DOMAIN; routeHost) or the E2b-Sandbox-Id header (one URL for every
// sandbox, E2B_SANDBOX_URL).
func withEnvd(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := envdCall{key: keyOf(r), accessToken: r.Header.Get("X-Access-Token") != "", sandbox: sandboxIDOf(r)}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), envdKey{}, call)))
	})
}

// sandboxIDOf is the sandbox an envd request is for, "" when it names none: its host's, when routeHost found
// one, else its E2b-Sandbox-Id header's.
func sandboxIDOf(r *http.Request) string {
	if id, ok := r.Context().Value(hostSandboxKey{}).(string); ok {
		return id
	}
	return r.Header.Get("E2b-Sandbox-Id")
}

// target is an envd call's caller and its Sandbox's data plane.
func (g *Gateway) target(ctx context.Context) (*caller, *sandboxPlane, error) {
	call, _ := ctx.Value(envdKey{}).(envdCall)
	if call.sandbox == "" {
		return nil, nil, errorf(http.StatusBadRequest, "%v", errNoSandbox)
	}
	c, err := g.ids.resolve(ctx, call.key)
	if err != nil {
		return nil, nil, err
	}
	if err := secureRefusal(ctx, c, call); err != nil {
		return nil, nil, err
	}
	p, err := newSandboxPlane(c, call.sandbox)
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}

// absolute makes a path absolute the way the Sandbox's own commands would: a relative path starts at its
// working directory, else its workspace.
func absolute(ctx context.Context, c *caller, sandbox, p string) (string, error) {
	if p == "" {
		return "", errorf(http.StatusBadRequest, "path is required")
	}
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	sbx, err := sandboxOf(ctx, c, sandbox)
	if err != nil {
		return "", err
	}
	return path.Join(filesclient.WorkingDir(sbx), p), nil
}

// connectError turns an error into the Connect error the SDKs map onto their exceptions (a missing path is
// NOT_FOUND, which they raise as FileNotFoundException or NotFoundException).
func connectError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	code := 0
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		code = ae.Code
	default:
		code = codeOf(err)
	}
	return connect.NewError(connectCode(code), err)
}

func connectCode(httpCode int) connect.Code {
	switch httpCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return connect.CodeInvalidArgument
	case http.StatusUnauthorized:
		return connect.CodeUnauthenticated
	case http.StatusForbidden:
		return connect.CodePermissionDenied
	case http.StatusNotFound:
		return connect.CodeNotFound
	case http.StatusConflict:
		return connect.CodeFailedPrecondition
	case http.StatusNotImplemented:
		return connect.CodeUnimplemented
	case http.StatusInsufficientStorage:
		return connect.CodeResourceExhausted
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusBadGateway:
		return connect.CodeUnavailable
	}
	return connect.CodeInternal
}
