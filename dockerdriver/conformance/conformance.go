// Package conformance is one table of behaviours that every dockerdriver.Driver must show, written down from
// what the real driver does on a real Docker daemon. The integration tier runs it against the real driver
// and the unit tier against the fake, so the fake that controller tests rely on cannot drift from Docker
// unnoticed: a behaviour the fake gets wrong fails in the unit tier.
package conformance

import (
	"context"
	"slices"
	"testing"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// T is what a behaviour needs of its test. *testing.T has it, and so has Ginkgo's GinkgoT(), so the
// table runs under either.
type T interface {
	Helper()
	Cleanup(func())
	Context() context.Context
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Harness is the driver under test and what the behaviours need besides the Driver interface.
type Harness struct {
	Driver dd.Driver
	// Image is a locally present image in which SleepCommand runs (busybox).
	Image string
	// Squat makes an object of kind under name that the driver did not make (no Dockside labels), and
	// removes it when t ends.
	Squat func(t T, kind Object, name string)
	// LoseNextEnsure makes the next Ensure of kind take effect but lose its answer. Nil where the answer
	// cannot be lost on purpose (real Docker): the behaviour then ensures twice, which leaves the driver
	// in the same place, an object of our name already there.
	LoseNextEnsure func(kind Object)
}

// SleepCommand is the command of every container the behaviours run and of the exec that must outlast
// its deadline. A fake has to play it as a command that does not end by itself.
var SleepCommand = []string{"sleep", "3600"}

// Behaviour is one row of the table: a name and the check of it against a harness.
type Behaviour struct {
	Name  string
	Check func(t T, h Harness)
}

// Behaviours is the table. Rows of eachKind are repeated for containers, networks and volumes.
func Behaviours() []Behaviour {
	return slices.Concat(
		eachKind("a second ensure adopts what the first made", ensureAdopts),
		eachKind("an ensure after a create whose answer was lost adopts it", ensureAdoptsLostCreate),
		eachKind("a missing one is observed as Exists false and removed without error", missingIsNoError),
		eachKind("a foreign one under our name is a Conflict to ensure, observe and remove", foreignIsConflict),
		eachKind("another owner's one under our name is a Conflict to ensure", otherOwnerIsConflict),
		[]Behaviour{
			{"container: is addressed by its ID as well as by its name", containerByID},
			{"network: is addressed by its ID as well as by its name", networkByID},
			{"container: an ensure with an image not on the node is NotFound, and nothing is made", missingImage},
			{"container: runc is among the runtimes, an ensure naming one the daemon lacks is InvalidSpec and makes nothing, one naming runc is created under it", unknownRuntime},
			{"volume: a tmpfs volume keeps its content while another running container mounts it", tmpfsKeptWhileHeld},
			{"volume: a tmpfs volume loses its content when no running container mounts it", tmpfsLostWhenUnheld},
			{"exec: past its deadline it ends as DeadlineExceeded and the container is killed", execDeadline},
			{"exec: with KeepOnTimeout, past its deadline it ends as DeadlineExceeded and the container runs on", execKeepOnTimeout},
			{"exec: in a container that is not running it is a Conflict", execNotRunning},
			{"stream exec: output streams while the command runs, input reaches it, and its exit code is reported", streamExecStreams},
			{"stream exec: a stream cut before the command ends is Uncertain and the container runs on", streamExecCut},
			{"stream exec: in a paused or stopped container it is a Conflict; without a command InvalidSpec", streamExecRefused},
			{"events: a killed container's die event carries its owner and exit code", dieEvent},
			{"paths: a stat reports a file's size and mode, a directory as one, and a missing path as NotFound", statPath},
			{"paths: a rename replaces the file at its target and never moves into a directory there", renamePath},
			{"paths: a remove of a directory needs recursive, and of a missing path is no error", removePath},
			{"paths: in a paused container stat and copy work, rename and remove are a Conflict", pathsPaused},
			{"paths: a copy into a full volume is NoSpace and leaves what it wrote", copyIntoFullVolume},
		},
	)
}

// Run runs every behaviour as a subtest of t.
func Run(t *testing.T, h Harness) {
	for _, b := range Behaviours() {
		t.Run(b.Name, func(t *testing.T) { b.Check(t, h) })
	}
}

// eachKind makes one row per kind of object from a check that takes the kind.
func eachKind(name string, check func(T, Harness, Object)) []Behaviour {
	out := make([]Behaviour, 0, len(Objects))
	for _, k := range Objects {
		out = append(out, Behaviour{Name: string(k) + ": " + name, Check: func(t T, h Harness) { check(t, h, k) }})
	}
	return out
}
