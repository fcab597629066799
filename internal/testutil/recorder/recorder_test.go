package recorder

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

func TestDrainGivesTypeAndReasonInOrderAndEmptiesTheRecorder(t *testing.T) {
	r := events.NewFakeRecorder(10)
	r.Eventf(nil, nil, corev1.EventTypeNormal, "Started", "Start", "started %s", "it")
	r.Eventf(nil, nil, corev1.EventTypeWarning, "Failed", "Start", "it broke")
	if got, want := Drain(r), []string{"Normal Started", "Warning Failed"}; !slices.Equal(got, want) {
		t.Errorf("Drain = %q, want %q", got, want)
	}
	if got := Drain(r); got != nil {
		t.Errorf("a second Drain = %q, want nothing", got)
	}
}
