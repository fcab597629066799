package files

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/dataplane/filesclient"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// dialUpload opens an upgraded write of /workspace/big, of unknown length, on a server serving e.
func dialUpload(t *testing.T, e *env) *websocket.Conn {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.h.Serve(w, r, e.target) }))
	t.Cleanup(srv.Close)
	d := websocket.Dialer{Subprotocols: []string{fileswire.Protocol}}
	conn, resp, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/files?path=/workspace/big&method=PUT", nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	t.Cleanup(func() { conn.Close() })
	return conn
}

// A client that sends its whole body before it reads (the Python client does) still gets the outcome of an
// upload the agent ended early: the agent reads what is still coming instead of resetting the connection.
func TestAnUploadEndedEarlyReachesAClientThatSendsFirst(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	conn := dialUpload(t, e)
	block := make([]byte, 64<<10)
	for range 4 * workspaceSize / len(block) {
		g.Expect(conn.WriteMessage(websocket.BinaryMessage, block)).To(Succeed())
	}
	g.Expect(conn.WriteMessage(websocket.TextMessage, []byte(fileswire.EndOfBody))).To(Succeed())
	var se *fileswire.StatusError
	err := filesclient.Outcome(conn, nil)
	g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
	g.Expect(se.Status.Code).To(BeEquivalentTo(http.StatusInsufficientStorage))
	g.Expect(se.Status.Message).To(Equal("/workspace/big is larger than the workspace: 1MiB"))
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

// Send stops at the agent's outcome: an endless body into a full mount ends with the reason.
func TestSendStopsAtAnOutcomeThatComesBeforeTheEnd(t *testing.T) {
	g, e := NewWithT(t), newEnv(t)
	var se *fileswire.StatusError
	err := filesclient.Send(dialUpload(t, e), endless{})
	g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
	g.Expect(se.Status.Code).To(BeEquivalentTo(http.StatusInsufficientStorage))
	g.Expect(e.list("/workspace")).To(BeEmpty(), "nothing half-written")
}
