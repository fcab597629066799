package dockerdriver

import (
	"errors"
	"fmt"
)

// Kind classifies a driver error once, so controllers decide on a kind and never parse messages.
type Kind string

const (
	// KindNotFound: the object (or one it needs: image, network, volume) does not exist.
	KindNotFound Kind = "NotFound"
	// KindConflict: the name is held by an object whose identity labels differ, or the object's state
	// does not allow the operation (e.g. exec in a stopped container).
	KindConflict Kind = "Conflict"
	// KindInvalidSpec: the request can never succeed as given; a terminal condition, not worth a retry.
	KindInvalidSpec Kind = "InvalidSpec"
	// KindUnavailable: the daemon could not be reached; nothing happened.
	KindUnavailable Kind = "Unavailable"
	// KindUncertain: the call may or may not have taken effect; observe before acting again.
	KindUncertain Kind = "Uncertain"
	// KindNoSpace: the file system a copy wrote to is full; what was written so far may be there.
	KindNoSpace Kind = "NoSpace"
)

// Phase names the step that failed, so conditions can say which one without Docker's text.
type Phase string

const (
	PhaseConnect Phase = "connect" // ping, version, event subscription
	PhaseObserve Phase = "observe" // inspect and list
	PhaseImage   Phase = "image"
	PhaseNetwork Phase = "network"
	PhaseVolume  Phase = "volume"
	PhaseCreate  Phase = "create"
	PhaseStart   Phase = "start"
	PhaseExec    Phase = "exec"
	PhaseCopy    Phase = "copy"
	PhasePause   Phase = "pause"
	PhaseStop    Phase = "stop"
	PhaseRemove  Phase = "remove"
)

// Error is every error the driver returns. Its message is the driver's own words: Docker's messages can
// hold secrets (environment values, paths) and never pass through Error(), which conditions, events and API
// replies show.
type Error struct {
	Kind   Kind
	Phase  Phase
	Object string // name of the container, network, volume or image concerned; may be empty
	Reason string // the driver's own short explanation; may be empty
	// Docker is Docker's own text of an Uncertain error, kept apart from the message: "the outcome is
	// unknown" alone cannot be acted on, and this is the one clue to why. It is for the agent's log and for
	// tests (gomega prints it in a failure), read with DockerText; empty for every other kind.
	Docker string
}

func (e *Error) Error() string {
	msg := string(e.Phase)
	if e.Object != "" {
		msg += " " + e.Object
	}
	msg += ": " + string(e.Kind)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// NewError builds a classified error; the fake driver and tests use it to speak the same language.
func NewError(kind Kind, phase Phase, object, reason string) *Error {
	return &Error{Kind: kind, Phase: phase, Object: object, Reason: reason}
}

func errorf(kind Kind, phase Phase, object, format string, args ...any) *Error {
	return NewError(kind, phase, object, fmt.Sprintf(format, args...))
}

// DockerText returns Docker's own text kept on a driver error in err's chain (see Error.Docker), or "".
func DockerText(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Docker
	}
	return ""
}

// KindOf returns the kind of a driver error, or "" for nil and foreign errors.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// PhaseOf returns the phase of a driver error, or "" for nil and foreign errors.
func PhaseOf(err error) Phase {
	var e *Error
	if errors.As(err, &e) {
		return e.Phase
	}
	return ""
}

func IsNotFound(err error) bool    { return KindOf(err) == KindNotFound }
func IsConflict(err error) bool    { return KindOf(err) == KindConflict }
func IsInvalidSpec(err error) bool { return KindOf(err) == KindInvalidSpec }
func IsUnavailable(err error) bool { return KindOf(err) == KindUnavailable }
func IsUncertain(err error) bool   { return KindOf(err) == KindUncertain }
func IsNoSpace(err error) bool     { return KindOf(err) == KindNoSpace }
