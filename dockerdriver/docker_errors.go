package dockerdriver

import (
	"errors"
	"net"
	"net/url"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// classify turns a Docker SDK error into the driver's classified Error. This is the one place Docker's
// errors are read; their text is left out of the message because it can hold secrets, and only an Uncertain
// error keeps it, in Error.Docker, since nothing else tells why a call's outcome is unknown.
func (d *Docker) classify(err error, phase Phase, object string) error {
	switch {
	case err == nil:
		return nil
	case isUnreachable(err):
		return d.unreachable(phase, object)
	case cerrdefs.IsNotFound(err):
		return NewError(KindNotFound, phase, object, "not found")
	case cerrdefs.IsConflict(err), cerrdefs.IsAlreadyExists(err), cerrdefs.IsPermissionDenied(err),
		cerrdefs.IsFailedPrecondition(err):
		// 409 and 403: a name, an address range or the object's state stands in the way.
		return NewError(KindConflict, phase, object, "Docker refused it in the current state")
	case strings.Contains(err.Error(), "no space left on device"):
		// A copy into a full file system: the daemon reports the kernel's ENOSPC only in its text.
		return NewError(KindNoSpace, phase, object, "the file system is full")
	case cerrdefs.IsInvalidArgument(err):
		return NewError(KindInvalidSpec, phase, object, "Docker refused the request as invalid")
	default:
		// Transport failures mid-call, timeouts and daemon-side errors: it may or may not have happened.
		e := NewError(KindUncertain, phase, object, "the outcome is unknown")
		e.Docker = err.Error()
		return e
	}
}

// unreachable is the one message for a daemon that is not there, naming where the driver looked.
func (d *Docker) unreachable(phase Phase, object string) *Error {
	return NewError(KindUnavailable, phase, object,
		"Docker is not reachable at "+d.cli.DaemonHost()+": start the daemon or set DOCKER_HOST")
}

// isUnreachable tells a failure to connect (nothing was sent, so nothing happened) from a connection that
// broke mid-call (uncertain). The SDK reports both as a connection failure; a refused or failed dial is
// reported without a cause or with a dial OpError.
func isUnreachable(err error) bool {
	if !client.IsErrConnectionFailed(err) {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op == "dial"
	}
	var ue *url.Error
	return !errors.As(err, &ue)
}
