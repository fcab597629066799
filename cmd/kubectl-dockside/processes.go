package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// processesClient speaks to one Sandbox's processes subresource (docs/design/dataplane.md, "Signals and
// background processes") through the API server, with the kubeconfig's credentials.
type processesClient struct {
	http    *http.Client
	base    *url.URL // .../namespaces/NS/sandboxes/NAME/processes
	sandbox string
}

// processes is the processes client of a Sandbox, in the flags' kubeconfig and namespace.
func (k *kubeFlags) processes(sandbox string) (*processesClient, error) {
	cfg, ns, err := k.config()
	if err != nil {
		return nil, err
	}
	return newProcessesClient(cfg, ns, sandbox)
}

func newProcessesClient(cfg *rest.Config, ns, sandbox string) (*processesClient, error) {
	hc, base, err := subresourceClient(cfg, ns, sandbox, "processes")
	if err != nil {
		return nil, err
	}
	return &processesClient{http: hc, sandbox: sandbox, base: base}, nil
}

// remoteProcess is what the processes subresource reports of one process (processes.Process in internal/dataplane/processes).
type remoteProcess struct {
	ID         string       `json:"id"`
	Command    []string     `json:"command"`
	Background bool         `json:"background"`
	Running    bool         `json:"running"`
	StartTime  metav1.Time  `json:"startTime"`
	EndTime    *metav1.Time `json:"endTime,omitempty"`
	ExitCode   *int         `json:"exitCode,omitempty"`
	Error      string       `json:"error,omitempty"`
}

// statusError is a failure the server answered: its HTTP code and its Status's message.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }

// do sends method to processes/elem... with query q and returns the body of a success; a failure is a
// *statusError carrying the server's message.
func (c *processesClient) do(ctx context.Context, method string, q url.Values, elem ...string) ([]byte, error) {
	u := c.base.JoinPath(elem...)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("making the request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.sandbox, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", c.sandbox, err)
	}
	if resp.StatusCode < 300 {
		return data, nil
	}
	var st metav1.Status
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if msg == "" {
		msg = resp.Status
	}
	return nil, &statusError{code: resp.StatusCode, msg: msg}
}

func (c *processesClient) list(ctx context.Context) ([]remoteProcess, error) {
	data, err := c.do(ctx, http.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []remoteProcess `json:"items"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: reading the process list: %w", c.sandbox, err)
	}
	return list.Items, nil
}

// signal is POST processes/ID/signal?signal=SIG; it returns what the agent says it did.
func (c *processesClient) signal(ctx context.Context, id, sig string) (string, error) {
	data, err := c.do(ctx, http.MethodPost, url.Values{"signal": {sig}}, id, "signal")
	if err != nil {
		return "", fmt.Errorf("process %s of %s: %w", id, c.sandbox, err)
	}
	var st metav1.Status
	if json.Unmarshal(data, &st) != nil || st.Message == "" {
		return fmt.Sprintf("sent SIG%s to process %q", strings.TrimPrefix(strings.ToUpper(sig), "SIG"), id), nil
	}
	return st.Message, nil
}

// state says how a process stands, for ps: Running, Exited N, or why it ended otherwise.
func (p remoteProcess) state() string {
	switch {
	case p.Running:
		return "Running"
	case p.ExitCode != nil:
		return fmt.Sprintf("Exited(%d)", *p.ExitCode)
	}
	return "Ended"
}

// age is how long ago t was, as kubectl prints ages.
func age(t time.Time, now time.Time) string {
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}
