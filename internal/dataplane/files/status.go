package files

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dockside-dev/dockside/internal/dataplane/fileswire"
)

// ReasonInsufficientStorage is the reason of a 507: the mount a write goes to is full.
const ReasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

func statusError(code int, reason metav1.StatusReason, format string, args ...any) *fileswire.StatusError {
	return &fileswire.StatusError{Status: metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: fmt.Sprintf(format, args...),
	}}
}

func badRequest(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusBadRequest, metav1.StatusReasonBadRequest, format, args...)
}

func notFound(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusNotFound, metav1.StatusReasonNotFound, format, args...)
}

func forbidden(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusForbidden, metav1.StatusReasonForbidden, format, args...)
}

func conflict(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusConflict, metav1.StatusReasonConflict, format, args...)
}

func insufficientStorage(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusInsufficientStorage, ReasonInsufficientStorage, format, args...)
}

// tooLargeAnswer is a 413: what the request asks for is more than the agent answers at once (bounds.go).
func tooLargeAnswer(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, format, args...)
}

func notImplemented(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusNotImplemented, metav1.StatusReasonMethodNotAllowed, format, args...)
}

func internal(format string, args ...any) *fileswire.StatusError {
	return statusError(http.StatusInternalServerError, metav1.StatusReasonInternalError, format, args...)
}

// writeStatus answers with err as a Status: a *fileswire.StatusError as it is, anything else as a 500
// carrying its message (the driver's errors carry no Docker text).
func writeStatus(w http.ResponseWriter, err error) {
	var se *fileswire.StatusError
	if !errors.As(err, &se) {
		se = internal("%v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(se.Status.Code))
	_ = json.NewEncoder(w).Encode(se.Status) // the client went away if this fails
}
