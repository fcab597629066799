package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// sandboxPlane is one Sandbox's data plane (the subresources of subresources.dockside.dev, docs/design/
// dataplane.md) as the caller reaches it: through the API server, with the caller's token.
type sandboxPlane struct {
	c    *caller
	name string
	base *url.URL // .../namespaces/NS/sandboxes/NAME
}

func newSandboxPlane(c *caller, name string) (*sandboxPlane, error) {
	u, _, err := rest.DefaultServerUrlFor(c.config)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's address: %w", err)
	}
	return &sandboxPlane{c: c, name: name, base: u.JoinPath("apis/subresources.dockside.dev/v1alpha1/namespaces", c.namespace, "sandboxes", name)}, nil
}

// planeError is a refusal of the data plane: its HTTP code and its Status's message.
type planeError struct {
	code int
	msg  string
}

func (e *planeError) Error() string { return e.msg }

// codeOf is the HTTP code of a data plane refusal, 0 for another error.
func codeOf(err error) int {
	var pe *planeError
	if errors.As(err, &pe) {
		return pe.code
	}
	return 0
}

// fileInfo is what the files subresource reports of a path.
type fileInfo struct {
	Name  string    `json:"name"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"`
	Mtime time.Time `json:"mtime"`
	Type  string    `json:"type"`
	Link  string    `json:"link,omitempty"`
}

// processInfo is what the processes subresource reports of one process.
type processInfo struct {
	ID          string   `json:"id"`
	Command     []string `json:"command"`
	Background  bool     `json:"background"`
	Running     bool     `json:"running"`
	ExitCode    *int     `json:"exitCode,omitempty"`
	Error       string   `json:"error,omitempty"`
	StdoutBytes int64    `json:"stdoutBytes"`
	StderrBytes int64    `json:"stderrBytes"`
	TTY         bool     `json:"tty,omitempty"`
	Tag         string   `json:"tag,omitempty"`
}

// do sends one plain call to subresource/elem... and returns the response of a success.
func (p *sandboxPlane) do(ctx context.Context, method, subresource string, q url.Values, body io.Reader, elem ...string) (*http.Response, error) {
	u := p.base.JoinPath(append([]string{subresource}, elem...)...)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("making the request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := p.c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s of sandbox %s: %w", subresource, p.name, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, refusal(resp)
}

// refusal is the planeError of a failed answer, in the server's words.
func refusal(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(data))
	var st metav1.Status
	if json.Unmarshal(data, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if msg == "" {
		msg = resp.Status
	}
	return &planeError{code: resp.StatusCode, msg: msg}
}

// decode sends a plain call and decodes its JSON answer into v (nil: the answer is dropped).
func (p *sandboxPlane) decode(ctx context.Context, method, subresource string, q url.Values, body io.Reader, v any, elem ...string) error {
	resp, err := p.do(ctx, method, subresource, q, body, elem...)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if v == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("reading the answer of %s: %w", subresource, err)
	}
	return nil
}

func (p *sandboxPlane) stat(ctx context.Context, path string) (fileInfo, error) {
	var info fileInfo
	return info, p.decode(ctx, http.MethodGet, "files", url.Values{"op": {"stat"}, "path": {path}}, nil, &info)
}

func (p *sandboxPlane) list(ctx context.Context, path string) ([]fileInfo, error) {
	var items []fileInfo
	return items, p.decode(ctx, http.MethodGet, "files", url.Values{"op": {"list"}, "path": {path}}, nil, &items)
}

func (p *sandboxPlane) mkdir(ctx context.Context, path string) error {
	return p.decode(ctx, http.MethodPost, "files", url.Values{"op": {"mkdir"}, "path": {path}, "parents": {"true"}}, nil, nil)
}

func (p *sandboxPlane) remove(ctx context.Context, path string) error {
	return p.decode(ctx, http.MethodDelete, "files", url.Values{"path": {path}, "recursive": {"true"}}, nil, nil)
}

// dial opens an upgraded files call (docs/design/dataplane-files.md, "The API server's request timeout"),
// so that a body of any size and duration goes through.
func (p *sandboxPlane) dial(ctx context.Context, method string, q url.Values) (*websocket.Conn, error) {
	u := *p.base.JoinPath("files")
	u.RawQuery = q.Encode()
	conn, err := filesclient.Dial(ctx, p.c.config, u, method)
	if err != nil {
		return nil, wireError(err)
	}
	return conn, nil
}

// wireError turns a refusal of an upgraded files call into a planeError.
func wireError(err error) error {
	var se *fileswire.StatusError
	if errors.As(err, &se) {
		return &planeError{code: int(se.Status.Code), msg: se.Status.Message}
	}
	return err
}

// write replaces the file path with body.
func (p *sandboxPlane) write(ctx context.Context, path string, body io.Reader) error {
	conn, err := p.dial(ctx, http.MethodPut, url.Values{"path": {path}})
	if err != nil {
		return err
	}
	defer conn.Close()
	return wireError(filesclient.Send(conn, body))
}

// read copies the file path to out; nothing is written to out when the read is refused.
func (p *sandboxPlane) read(ctx context.Context, path string, out func() io.Writer) error {
	conn, err := p.dial(ctx, http.MethodGet, url.Values{"path": {path}})
	if err != nil {
		return err
	}
	defer conn.Close()
	return wireError(filesclient.Outcome(conn, &lazyWriter{open: out}))
}

// lazyWriter opens its writer at the first byte, so that a refusal that comes before any data can still be
// answered with its own status.
type lazyWriter struct {
	open func() io.Writer
	w    io.Writer
}

func (l *lazyWriter) Write(b []byte) (int, error) {
	if l.w == nil {
		l.w = l.open()
	}
	return l.w.Write(b) //nolint:wrapcheck // the response writer's own error
}

// termSize is a terminal's size in characters.
type termSize struct{ cols, rows uint32 }

func (t termSize) query(q url.Values) url.Values {
	q.Set("cols", strconv.FormatUint(uint64(t.cols), 10))
	q.Set("rows", strconv.FormatUint(uint64(t.rows), 10))
	return q
}

// startProcess starts command in the background under id (processes subresource), labelled tag, with a
// terminal of that size when tty is not nil.
func (p *sandboxPlane) startProcess(ctx context.Context, id string, command []string, stdin bool, tag string, tty *termSize) error {
	q := url.Values{"command": command, "id": {id}}
	if stdin {
		q.Set("stdin", "true")
	}
	if tag != "" {
		q.Set("tag", tag)
	}
	if tty != nil {
		q.Set("tty", "true")
		tty.query(q)
	}
	return p.decode(ctx, http.MethodPost, "processes", q, nil, nil)
}

// resize gives the terminal of process id a new size.
func (p *sandboxPlane) resize(ctx context.Context, id string, size termSize) error {
	return p.decode(ctx, http.MethodPost, "processes", size.query(url.Values{}), nil, nil, id, "resize")
}

func (p *sandboxPlane) process(ctx context.Context, id string) (processInfo, error) {
	var info processInfo
	return info, p.decode(ctx, http.MethodGet, "processes", nil, nil, &info, id)
}

func (p *sandboxPlane) processes(ctx context.Context) ([]processInfo, error) {
	var list struct {
		Items []processInfo `json:"items"`
	}
	return list.Items, p.decode(ctx, http.MethodGet, "processes", nil, nil, &list)
}

func (p *sandboxPlane) signal(ctx context.Context, id, sig string) error {
	return p.decode(ctx, http.MethodPost, "processes", url.Values{"signal": {sig}}, nil, nil, id, "signal")
}

func (p *sandboxPlane) stdin(ctx context.Context, id string, data []byte, closeIt bool) error {
	q := url.Values{}
	if closeIt {
		q.Set("close", "true")
	}
	return p.decode(ctx, http.MethodPost, "processes", q, bytes.NewReader(data), nil, id, "stdin")
}

// follow streams the process's stream (stdout or stderr) from byte from to out until the process ends or the
// server ends the answer; it returns the offset reached.
func (p *sandboxPlane) follow(ctx context.Context, id, stream string, from int64, out func([]byte) error) (int64, error) {
	resp, err := p.do(ctx, http.MethodGet, "processes", url.Values{"from": {strconv.FormatInt(from, 10)}, "follow": {"true"}}, nil, id, stream)
	if err != nil {
		return from, err
	}
	defer resp.Body.Close()
	if s, err := strconv.ParseInt(resp.Header.Get("X-Dockside-Output-Start"), 10, 64); err == nil {
		from = s
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if werr := out(append([]byte(nil), buf[:n]...)); werr != nil {
				return from, werr
			}
			from += int64(n)
		}
		if errors.Is(err, io.EOF) {
			return from, nil
		}
		if err != nil {
			return from, fmt.Errorf("reading the %s of process %s: %w", stream, id, err)
		}
	}
}

// run runs command to its end through the exec subresource and returns its exit code and standard error.
func (p *sandboxPlane) run(ctx context.Context, command []string) (int, string, error) {
	u := *p.base.JoinPath("exec")
	u.RawQuery = url.Values{"command": command, "stdout": {"true"}, "stderr": {"true"}}.Encode()
	ex, err := remotecommand.NewWebSocketExecutor(p.c.config, http.MethodGet, u.String())
	if err != nil {
		return 0, "", fmt.Errorf("making the exec client: %w", err)
	}
	var stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stderr: &stderr})
	var exit utilexec.CodeExitError
	switch {
	case errors.As(err, &exit):
		return exit.Code, stderr.String(), nil
	case err != nil:
		return 0, "", fmt.Errorf("exec in sandbox %s: %w", p.name, err)
	}
	return 0, stderr.String(), nil
}
