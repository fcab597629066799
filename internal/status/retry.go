package status

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// writeBackoff paces the retries of a write that met a transient API error: three more tries, after 100 ms,
// 400 ms and 1.6 s, about two seconds in all, so that a pass holds its worker briefly; past that the pass
// returns the error and the controller's own backoff takes over.
var writeBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 4, Steps: 4}

// RetryTransient runs write, and again after a transient API error (see Transient) while ctx lasts, at most
// writeBackoff.Steps times in all. It returns write's last error. Conflicts are not retried here: a write
// from a stale read has its own handling (End, RequeueOnConflict, retry.RetryOnConflict).
func RetryTransient(ctx context.Context, write func() error) error {
	return retry.OnError(writeBackoff, func(err error) bool { return ctx.Err() == nil && Transient(err) }, write)
}

// Transient tells whether err is one that a moment may cure: the API server overloaded, throttling, failing
// inside (any 5xx: apimachinery reads a bare one as an internal error), timing out or unreachable, or the
// request's own deadline. Whether the write happened may be unknown; the writes
// retried are guarded by a resourceVersion, so a repeat of one that did happen conflicts instead of
// applying twice.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsTooManyRequests(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), utilnet.IsConnectionReset(err), utilnet.IsProbableEOF(err):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr)
}
