package files

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// kube-apiserver cuts an ordinary request at its --request-timeout (60 s by default), and files is not one of
// the subresources it lets run long; a connection upgraded to a WebSocket outlives that deadline. So a call
// that carries a body (a read, a write, a tar stream in or out) may ask for the upgrade: its checks answer in
// plain HTTP as for any call, and once the body moves the call switches protocols and the body travels as
// WebSocket messages, ended by an outcome (docs/design/dataplane-files.md, "The API server's request
// timeout"; the messages are package fileswire's).

// transferIdle ends an upgraded call whose connection moved nothing for this long.
const transferIdle = 5 * time.Minute

// closeWait is how long an ended call waits for its client to close after the outcome.
const closeWait = 30 * time.Second

var upgrader = websocket.Upgrader{
	Subprotocols:    []string{fileswire.Protocol},
	ReadBufferSize:  64 << 10,
	WriteBufferSize: 64 << 10,
	// The caller is authenticated by the API server's front proxy certificate, not by a browser's cookie,
	// so another origin gains nothing; and the aggregator's Host is not the client's.
	CheckOrigin: func(*http.Request) bool { return true },
}

// methodOf is the method a request stands for: a WebSocket handshake names it in method=, GET by default.
func methodOf(r *http.Request) string {
	if r.Method == http.MethodGet {
		if m := r.URL.Query().Get(fileswire.MethodParam); m != "" {
			return m
		}
	}
	return r.Method
}

// transfer is the ResponseWriter and request body of a call that asked for the upgrade (or named a method
// without it, which then runs its checks and refuses to move a body: a client that could not read a refused
// handshake's answer asks again that way to learn why). It upgrades when the body is first read or a success
// is first answered; until then it answers in plain HTTP.
type transfer struct {
	w       http.ResponseWriter
	r       *http.Request
	upgrade bool // the request asked for it

	mu      sync.Mutex
	conn    *websocket.Conn // once upgraded
	header  http.Header     // the answer's, once upgraded
	code    int             // the answer's code once upgraded; 0 before
	outcome bytes.Buffer    // a JSON answer or Status, sent at the end
	sent    int64           // the data's bytes sent
	failed  error           // the first failed send

	msg   io.Reader // the client's binary message being read
	ended bool      // the client said "end"
}

// newTransfer wraps a call that asked for the upgrade or named its method. The declared length of an upload
// (length=) stands for its Content-Length, which the handshake has none of.
func newTransfer(w http.ResponseWriter, r *http.Request) (*transfer, *http.Request, error) {
	t := &transfer{w: w, r: r, upgrade: websocket.IsWebSocketUpgrade(r)}
	r2 := r.Clone(r.Context())
	r2.Method = methodOf(r)
	r2.Body = t
	r2.ContentLength = -1
	if s := r.URL.Query().Get("length"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return nil, nil, badRequest("length %q is not a number of bytes", s)
		}
		r2.ContentLength = n
	}
	return t, r2, nil
}

// switchProtocols upgrades the connection once; the caller holds mu.
func (t *transfer) switchProtocols() error {
	if t.conn != nil {
		return nil
	}
	if !t.upgrade {
		return badRequest("%s of a body needs the WebSocket upgrade (Upgrade: websocket, protocol %s); nothing was written", t.r.URL.Query().Get(fileswire.MethodParam), fileswire.Protocol)
	}
	conn, err := upgrader.Upgrade(t.w, t.r, nil)
	if err != nil {
		return fmt.Errorf("the WebSocket upgrade failed: %w", err) // Upgrade has answered the client
	}
	t.conn, t.header = conn, t.w.Header().Clone()
	return nil
}

// Read reads the upload: the binary messages up to "end". A connection that breaks before it, or stalls
// for transferIdle, fails the read, so that nothing half-sent is kept.
func (t *transfer) Read(p []byte) (int, error) {
	t.mu.Lock()
	err := t.switchProtocols()
	t.mu.Unlock()
	if err != nil {
		return 0, err
	}
	for !t.ended {
		if t.msg == nil {
			_ = t.conn.SetReadDeadline(time.Now().Add(transferIdle))
			kind, msg, err := t.conn.NextReader()
			if err != nil {
				return 0, fmt.Errorf("the upload broke off: %w", io.ErrUnexpectedEOF)
			}
			if kind == websocket.TextMessage {
				word, _ := io.ReadAll(io.LimitReader(msg, 64))
				if string(word) != fileswire.EndOfBody {
					return 0, fmt.Errorf("the upload's text message %q is not %q", word, fileswire.EndOfBody)
				}
				t.ended = true
				break
			}
			t.msg = msg
		}
		n, err := t.msg.Read(p)
		if errors.Is(err, io.EOF) {
			t.msg, err = nil, nil
		}
		if n > 0 || err != nil {
			return n, err //nolint:wrapcheck // the connection's own error, as a Reader passes it on
		}
	}
	return 0, io.EOF
}

// Close is the request body's: the connection closes in finish.
func (t *transfer) Close() error { return nil }

func (t *transfer) Header() http.Header {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn != nil {
		return t.header
	}
	return t.w.Header()
}

// WriteHeader answers a refusal in plain HTTP before the upgrade; a success upgrades, and after the upgrade
// the code is the outcome's.
func (t *transfer) WriteHeader(code int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == nil && code >= http.StatusMultipleChoices {
		t.w.WriteHeader(code)
		return
	}
	if err := t.switchProtocols(); err != nil {
		t.failed = err
		var se *fileswire.StatusError
		if errors.As(err, &se) {
			t.w.Header().Set("Content-Type", "application/json")
			t.w.WriteHeader(int(se.Status.Code))
			_ = json.NewEncoder(t.w).Encode(se.Status)
		}
		return
	}
	t.code = code
}

// Write sends data as binary messages, and keeps a JSON answer or Status for the outcome.
func (t *transfer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.conn == nil && t.code == 0 && t.failed == nil:
		return t.w.Write(p) //nolint:wrapcheck // a plain answer, as net/http writes it
	case t.failed != nil:
		return 0, t.failed
	case t.header.Get("Content-Type") == "application/json" || t.code >= http.StatusMultipleChoices:
		return t.outcome.Write(p) //nolint:wrapcheck // a bytes.Buffer does not fail
	}
	_ = t.conn.SetWriteDeadline(time.Now().Add(transferIdle))
	if err := t.conn.WriteMessage(websocket.BinaryMessage, p); err != nil {
		t.failed = err
		return 0, err //nolint:wrapcheck // the connection's own error
	}
	t.sent += int64(len(p))
	return len(p), nil
}

// finish sends the outcome of an upgraded call and closes its connection. A read that sent less than the
// length it stated (the file shrank, or the spool broke) is a failure.
func (t *transfer) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conn == nil {
		return
	}
	defer t.conn.Close()
	if t.failed != nil {
		return
	}
	outcome := t.outcome.Bytes()
	if len(outcome) == 0 {
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(t.code)}
		if want, err := strconv.ParseInt(t.header.Get("Content-Length"), 10, 64); err == nil && want != t.sent {
			st = internal("the body broke off after %d of its %d bytes", t.sent, want).Status
		}
		outcome, _ = json.Marshal(st)
	}
	_ = t.conn.SetWriteDeadline(time.Now().Add(transferIdle))
	if t.conn.WriteMessage(websocket.TextMessage, outcome) == nil &&
		t.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")) == nil {
		t.drain()
	}
}

// drain reads and drops what the client still sends until it closes its end or goes quiet for closeWait.
// Closing with unread data in hand makes the kernel reset the connection, and a reset loses what the client
// has not read yet: an upload the agent ended early (a full mount) would reach its client as a broken
// connection instead of the outcome that says why.
func (t *transfer) drain() {
	for {
		_ = t.conn.SetReadDeadline(time.Now().Add(closeWait))
		if _, _, err := t.conn.NextReader(); err != nil {
			return
		}
	}
}
