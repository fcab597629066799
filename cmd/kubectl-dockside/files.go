package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// filesClient speaks to one Sandbox's files subresource (subresources.dockside.dev, see
// docs/design/dataplane-files.md) through the API server, with the kubeconfig's credentials.
type filesClient struct {
	cfg     *rest.Config
	http    *http.Client
	base    *url.URL // .../namespaces/NS/sandboxes/NAME/files
	sandbox string
}

func newFilesClient(cfg *rest.Config, ns, sandbox string) (*filesClient, error) {
	hc, base, err := subresourceClient(cfg, ns, sandbox, "files")
	if err != nil {
		return nil, err
	}
	return &filesClient{cfg: cfg, http: hc, base: base, sandbox: sandbox}, nil
}

// remoteInfo is what the files subresource reports of a path (files.FileInfo).
type remoteInfo struct {
	Name  string    `json:"name"`
	Size  int64     `json:"size"`
	Mode  string    `json:"mode"`
	Mtime time.Time `json:"mtime"`
	Type  string    `json:"type"`
	Link  string    `json:"link,omitempty"`
}

// do sends one request and returns the response of a success; a failure is the Status the server
// answered, as an error (a full mount, 507, exits with exitTooLarge).
func (c *filesClient) do(ctx context.Context, method string, q url.Values, body io.Reader, size int64) (*http.Response, error) {
	u := *c.base
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("making the request: %w", err)
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s:%s: %w", strings.ToLower(method), c.sandbox, q.Get("path"), err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, c.failure(resp, q.Get("path"))
}

// failure turns a failed response into an error carrying the server's message.
func (c *filesClient) failure(resp *http.Response, p string) error {
	var st metav1.Status
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &st) == nil && st.Message != "" {
		msg = st.Message
	}
	if msg == "" {
		msg = resp.Status
	}
	return c.statusFailure(resp.StatusCode, msg, p)
}

// statusFailure is the error of a failure the server answered with code and msg: a full mount (507) exits
// with exitTooLarge, a missing path is a notFoundError.
func (c *filesClient) statusFailure(code int, msg, p string) error {
	err := fmt.Errorf("%s:%s: %s", c.sandbox, p, msg)
	switch code {
	case http.StatusInsufficientStorage:
		return &exitError{code: exitTooLarge, err: err}
	case http.StatusNotFound:
		return &notFoundError{err}
	}
	return err
}

// notFoundError is a path that is not there.
type notFoundError struct{ error }

func (e *notFoundError) Unwrap() error { return e.error }

func isNotFound(err error) bool {
	var nf *notFoundError
	return errors.As(err, &nf)
}

// json decodes the body of a successful request into v.
func (c *filesClient) json(ctx context.Context, method string, q url.Values, v any) error {
	resp, err := c.do(ctx, method, q, nil, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s:%s: reading the answer: %w", c.sandbox, q.Get("path"), err)
	}
	return nil
}

func (c *filesClient) stat(ctx context.Context, p string) (remoteInfo, error) {
	var info remoteInfo
	return info, c.json(ctx, http.MethodGet, url.Values{"op": {"stat"}, "path": {p}}, &info)
}

func (c *filesClient) list(ctx context.Context, p string) ([]remoteInfo, error) {
	var items []remoteInfo
	return items, c.json(ctx, http.MethodGet, url.Values{"op": {"list"}, "path": {p}}, &items)
}

func (c *filesClient) mkdirAll(ctx context.Context, p string) error {
	var info remoteInfo
	return c.json(ctx, http.MethodPost, url.Values{"op": {"mkdir"}, "path": {p}, "parents": {"true"}}, &info)
}

// put sends body (of size bytes, -1 unknown) as the file p with mode, or as a tar stream into the directory
// p with tar, over an upgraded connection (transfer.go).
func (c *filesClient) put(ctx context.Context, p string, body io.Reader, size int64, mode string, tar bool) error {
	q := url.Values{"path": {p}}
	if mode != "" {
		q.Set("mode", mode)
	}
	if tar {
		q.Set("op", "tar")
	}
	return c.send(ctx, q, body, size)
}

// get streams the file p, or the directory p as a tar stream with tar, over an upgraded connection; reading
// it to io.EOF means it arrived whole. The caller closes it.
func (c *filesClient) get(ctx context.Context, p string, tar bool) (io.ReadCloser, error) {
	q := url.Values{"path": {p}}
	if tar {
		q.Set("op", "tar")
	}
	return c.receive(ctx, q)
}
