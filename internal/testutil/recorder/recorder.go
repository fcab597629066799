// Package recorder reads what client-go's FakeRecorder recorded, for the unit tests of the reconcilers that
// check which Events a pass emitted.
package recorder

import (
	"strings"

	"k8s.io/client-go/tools/events"
)

// Drain takes the Events recorded so far off r, as "<type> <reason>" in the order they were recorded.
func Drain(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			f := strings.Fields(e)
			out = append(out, f[0]+" "+f[1])
		default:
			return out
		}
	}
}
