package sandboxexec

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
)

// Processes sends method to .../sandboxes/name/processes followed by pathQuery ("", "/ID/signal?signal=TERM")
// through the API server as cfg's user, and returns the status code and body.
func Processes(cfg *rest.Config, method, ns, name, pathQuery string) (int, string, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, "", fmt.Errorf("the API client: %w", err)
	}
	base, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return 0, "", fmt.Errorf("the API server's URL: %w", err)
	}
	path, query, _ := strings.Cut(pathQuery, "?")
	u := base.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", ns, "sandboxes", name, "processes"+path)
	u.RawQuery = query
	req, err := http.NewRequest(method, u.String(), nil)
	if err != nil {
		return 0, "", fmt.Errorf("the request: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", fmt.Errorf("reading the answer to %s %s: %w", method, u, err)
	}
	return resp.StatusCode, string(body), nil
}
