package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/websocket"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// Bodies travel over a connection upgraded to a WebSocket, which kube-apiserver's --request-timeout does
// not cut (docs/design/dataplane-files.md, "The API server's request timeout"; the wire is
// filesclient.Dial, Send and Outcome).

// upgrade opens the files call q as method over an upgraded connection.
func (c *filesClient) upgrade(ctx context.Context, method string, q url.Values) (*websocket.Conn, error) {
	u := *c.base
	u.RawQuery = q.Encode()
	conn, err := filesclient.Dial(ctx, c.cfg, u, method)
	return conn, c.wireError(err, q.Get("path"))
}

// wireError names the Sandbox and path in an error of the wire, a refusal in the server's words.
func (c *filesClient) wireError(err error, p string) error {
	var se *fileswire.StatusError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return c.statusFailure(int(se.Status.Code), se.Status.Message, p)
	}
	return fmt.Errorf("%s:%s: %w", c.sandbox, p, err)
}

// send uploads body as q (a file or a tar stream); size is its length, -1 unknown.
func (c *filesClient) send(ctx context.Context, q url.Values, body io.Reader, size int64) error {
	if size >= 0 {
		q.Set("length", strconv.FormatInt(size, 10))
	}
	conn, err := c.upgrade(ctx, http.MethodPut, q)
	if err != nil {
		return err
	}
	defer conn.Close()
	return c.wireError(filesclient.Send(conn, body), q.Get("path"))
}

// download is the body of an upgraded read: its bytes, then io.EOF only after the agent's Success.
type download struct {
	conn *websocket.Conn
	pr   *io.PipeReader
}

// receive reads the upgraded call q: the bytes the agent sends, as they come.
func (c *filesClient) receive(ctx context.Context, q url.Values) (io.ReadCloser, error) {
	conn, err := c.upgrade(ctx, http.MethodGet, q)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(c.wireError(filesclient.Outcome(conn, pw), q.Get("path"))) }()
	return &download{conn: conn, pr: pr}, nil
}

func (d *download) Read(p []byte) (int, error) { return d.pr.Read(p) } //nolint:wrapcheck // the pipe's, EOF included

func (d *download) Close() error {
	d.pr.Close()
	return d.conn.Close() //nolint:wrapcheck // closing a finished or abandoned call
}
