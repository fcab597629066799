// Package filesclient is the client's end of an upgraded files call (the wire: package fileswire), for the
// kubectl plugin, the benches and the tests. It does not import the server, internal/dataplane/files.
package filesclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	wsclient "k8s.io/client-go/transport/websocket"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// sendBlock is the largest message of an upload.
const sendBlock = 1 << 20

// Dial opens the files call at u (the files URL, its query naming the operation) as method, through the API
// server of cfg, and switches it to a WebSocket, which closes when ctx ends. A refusal is a *fileswire.StatusError.
func Dial(ctx context.Context, cfg *rest.Config, u url.URL, method string) (*websocket.Conn, error) {
	rt, holder, err := wsclient.RoundTripperFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("making the API client: %w", err)
	}
	if method != http.MethodGet {
		q := u.Query()
		q.Set(fileswire.MethodParam, method)
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("making the request: %w", err)
	}
	conn, err := wsclient.Negotiate(rt, holder, req, fileswire.Protocol)
	if err != nil {
		var up *httpstream.UpgradeFailureError
		var se *apierrors.StatusError
		if errors.As(err, &up) && errors.As(up.Cause, &se) {
			return nil, &fileswire.StatusError{Status: se.ErrStatus}
		}
		return nil, fmt.Errorf("opening the files call: %w", err)
	}
	context.AfterFunc(ctx, func() { conn.Close() })
	return conn, nil
}

// Send uploads body over conn and returns the agent's outcome. The outcome is read while the body goes, so
// an agent that ends the call early (a full mount) stops the upload at once. A body that fails to read
// closes the connection without the end, and the agent keeps nothing of it.
func Send(conn *websocket.Conn, body io.Reader) error {
	outcome := make(chan error, 1)
	go func() { outcome <- Outcome(conn, nil) }()
	buf := make([]byte, sendBlock)
	for {
		select {
		case err := <-outcome:
			return endedEarly(conn, err)
		default:
		}
		n, rerr := body.Read(buf)
		if n > 0 {
			if err := conn.WriteMessage(websocket.BinaryMessage, buf[:n]); err != nil {
				return errors.Join(<-outcome, fmt.Errorf("sending: %w", err))
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			conn.Close()
			return fmt.Errorf("reading what to send: %w", rerr)
		}
	}
	if err := conn.WriteMessage(websocket.TextMessage, []byte(fileswire.EndOfBody)); err != nil {
		return errors.Join(<-outcome, fmt.Errorf("sending: %w", err))
	}
	return <-outcome
}

// endedEarly is an upload's outcome that came before the upload's end: the agent's refusal, or a success that
// cannot be one. The connection closes with the WebSocket's own closing handshake.
func endedEarly(conn *websocket.Conn, outcome error) error {
	_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	if outcome == nil {
		return errors.New("the agent ended the call before the upload did")
	}
	return outcome
}

// Outcome copies the data the agent sends to data (nil: none is expected) and returns its outcome: nil for
// a success, a *fileswire.StatusError for a failure, an error when the connection broke off before the outcome.
func Outcome(conn *websocket.Conn, data io.Writer) error {
	for {
		kind, msg, err := conn.NextReader()
		if err != nil {
			return fmt.Errorf("the connection broke off before the agent said how the call ended: %w", err)
		}
		if kind == websocket.BinaryMessage {
			if data == nil {
				return errors.New("the agent sent data where none was expected")
			}
			if _, err := io.Copy(data, msg); err != nil {
				return fmt.Errorf("receiving: %w", err)
			}
			continue
		}
		var st metav1.Status
		if err := json.NewDecoder(msg).Decode(&st); err != nil {
			return fmt.Errorf("reading the agent's outcome: %w", err)
		}
		if st.Kind == "Status" && st.Status != metav1.StatusSuccess {
			return &fileswire.StatusError{Status: st}
		}
		return nil
	}
}
