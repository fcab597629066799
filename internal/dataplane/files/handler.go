package files

import (
	"context"
	"errors"
	"io/fs"
	"net/http"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// The operations, named by the query parameter op; a plain GET, PUT or DELETE of ?path= reads, writes or
// removes a file.
const (
	opStat  = "stat"
	opList  = "list"
	opTar   = "tar"
	opMkdir = "mkdir"
)

const dirMode = fs.ModeDir | 0o755

// Handler serves the files subresource against one node's Docker daemon. The zero value is not usable: set
// Driver.
type Handler struct {
	Driver dd.Driver
	// SpoolDir is where bodies wait on the node's disk on their way between a client and the daemon (see
	// spool.go); "" is the system's temporary directory. It needs room for the largest mount.
	SpoolDir string
	// MaxSpoolBytes bounds a download spooled from the container's root file system, whose files are the
	// image's (capped by the node's --max-image-size) and what a writable root adds; 0: DefaultMaxSpoolBytes.
	// Downloads from a mount are bounded by its size.
	MaxSpoolBytes int64
	// HostVolumes serves files read and written in the workspace from its volume's host side when the
	// volume's mount is visible here (volume.go); set it when hostvolume.Access says this process may.
	HostVolumes bool
}

// Verb is the RBAC verb a request needs on sandboxes/files: get to read (read, stat, list, tar out), create
// to change anything (write, mkdir, tar in, remove).
func Verb(r *http.Request) string {
	if m := methodOf(r); m == http.MethodGet || m == http.MethodHead {
		return "get"
	}
	return "create"
}

// Serve serves one request, already authorized, in the Sandbox's Target. Failures are answered as a
// Kubernetes Status (see the package doc for the operations and docs/design/dataplane-files.md for the codes).
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, t Target) {
	q := r.URL.Query()
	if websocket.IsWebSocketUpgrade(r) || q.Has(fileswire.MethodParam) {
		tr, upgraded, err := newTransfer(w, r)
		if err != nil {
			writeStatus(w, err)
			return
		}
		defer tr.finish()
		w, r = tr, upgraded
	}
	p, err := cleanPath(q.Get("path"))
	if err != nil {
		writeStatus(w, err)
		return
	}
	op := q.Get("op")
	ctx := r.Context()
	switch {
	case r.Method == http.MethodGet && op == "":
		err = h.read(ctx, w, t, p)
	case r.Method == http.MethodGet && op == opStat:
		err = h.stat(ctx, w, t, p)
	case r.Method == http.MethodGet && op == opList:
		err = h.list(ctx, w, t, p)
	case r.Method == http.MethodGet && op == opTar:
		err = h.tarOut(ctx, w, t, p)
	case r.Method == http.MethodPut && op == "":
		err = h.write(ctx, w, r, t, p)
	case r.Method == http.MethodPut && op == opTar:
		err = h.tarIn(ctx, w, r, t, p)
	case r.Method == http.MethodPost && op == opMkdir:
		err = h.mkdir(ctx, w, t, p, q.Get("parents") == "true")
	case r.Method == http.MethodDelete && op == "":
		err = h.remove(ctx, w, t, p, q.Get("recursive") == "true")
	default:
		err = statusError(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"%s with op=%q is not a files operation: GET (op= empty, stat, list or tar), PUT (op= empty or tar), POST op=mkdir, DELETE", r.Method, op)
	}
	if err != nil {
		writeStatus(w, err)
	}
}

// driverError turns a driver error into a Status a person understands.
func driverError(err error, t Target) error {
	var se *fileswire.StatusError
	if errors.As(err, &se) {
		return se
	}
	var de *dd.Error
	if !errors.As(err, &de) {
		return internal("%v", err)
	}
	switch de.Kind {
	case dd.KindNotFound:
		return conflict("the Sandbox's primary container %s does not exist: it is starting, rolling or gone", t.Container)
	case dd.KindConflict:
		return conflict("%s", de.Reason)
	case dd.KindInvalidSpec:
		return notImplemented("%s", de.Reason)
	case dd.KindNoSpace:
		return insufficientStorage("the file system is full")
	case dd.KindUnavailable:
		return statusError(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "the node's Docker daemon is not reachable")
	}
	return internal("Docker did not answer clearly (%s); nothing was left half-written", de.Phase)
}

// running checks that the primary runs and is not paused, which a change needs, and reports it: a paused one
// is refused rather than waited for (docs/design/dataplane-files.md).
func (h *Handler) running(ctx context.Context, t Target) (dd.ContainerInfo, error) {
	paused := conflict("the Sandbox is paused: set spec.lifecycle to Running to change its files")
	if t.Paused {
		return dd.ContainerInfo{}, paused
	}
	info, err := h.Driver.ObserveContainer(ctx, t.Container)
	switch {
	case err != nil:
		return info, driverError(err, t)
	case !info.Exists:
		return info, driverError(dd.NewError(dd.KindNotFound, dd.PhaseObserve, t.Container, ""), t)
	case info.State == dd.StatePaused:
		return info, paused
	case info.State != dd.StateRunning:
		return info, conflict("the Sandbox's primary container is %s, not running", info.State)
	}
	return info, nil
}
