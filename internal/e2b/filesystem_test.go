package e2b

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem"
)

func TestEntriesAreEnvdsEntryInfo(t *testing.T) {
	g := NewWithT(t)
	mtime := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	dir := entryOf(fileInfo{Name: "d", Type: "dir", Mode: "755", Mtime: mtime}, "/workspace/d")
	g.Expect(dir.GetType()).To(Equal(filesystem.FileType_FILE_TYPE_DIRECTORY))
	g.Expect(dir.GetName()).To(Equal("d"))
	g.Expect(dir.GetPath()).To(Equal("/workspace/d"))
	g.Expect(dir.GetMode()).To(BeEquivalentTo(0o755))
	g.Expect(dir.GetPermissions()).To(Equal("drwxr-xr-x"))
	g.Expect(dir.GetModifiedTime().AsTime()).To(Equal(mtime))
	file := entryOf(fileInfo{Name: "a", Type: "file", Mode: "644", Size: 3}, "/workspace/a")
	g.Expect(file.GetType()).To(Equal(filesystem.FileType_FILE_TYPE_FILE))
	g.Expect(file.GetSize()).To(BeEquivalentTo(3))
	g.Expect(file.GetPermissions()).To(Equal("-rw-r--r--"))
	link := entryOf(fileInfo{Name: "l", Type: "symlink", Mode: "777", Link: "/etc/hosts"}, "/workspace/l")
	g.Expect(link.GetSymlinkTarget()).To(Equal("/etc/hosts"))
	g.Expect(link.GetPermissions()).To(Equal("Lrwxrwxrwx"))
}

func TestDataPlaneRefusalsKeepTheirMeaning(t *testing.T) {
	g := NewWithT(t)
	for code, want := range map[int]connect.Code{
		http.StatusNotFound:            connect.CodeNotFound,
		http.StatusForbidden:           connect.CodePermissionDenied,
		http.StatusBadRequest:          connect.CodeInvalidArgument,
		http.StatusConflict:            connect.CodeFailedPrecondition,
		http.StatusInsufficientStorage: connect.CodeResourceExhausted,
		http.StatusUnauthorized:        connect.CodeUnauthenticated,
	} {
		g.Expect(connect.CodeOf(connectError(&planeError{code: code, msg: "x"}))).To(Equal(want), "HTTP %d", code)
	}
	g.Expect(connect.CodeOf(connectError(errors.New("broken")))).To(Equal(connect.CodeInternal))

	rec := httptest.NewRecorder()
	envdError(rec, &planeError{code: http.StatusNotFound, msg: "/workspace/x: no such file or directory"})
	g.Expect(rec.Code).To(Equal(http.StatusNotFound))
	var body map[string]any
	g.Expect(json.Unmarshal(rec.Body.Bytes(), &body)).To(Succeed())
	g.Expect(body).To(Equal(map[string]any{"code": float64(404), "message": "/workspace/x: no such file or directory"}))
}
