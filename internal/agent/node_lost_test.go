package agent

import (
	"testing"
	"time"

	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestNodeLostAfterMustOutlastTheLease(t *testing.T) {
	for name, c := range map[string]struct {
		lease, lostAfter time.Duration
		leaderElection   bool
		ok               bool
	}{
		"defaults":                           {leaderElection: true, ok: true},
		"the default Lease of 15s":           {lostAfter: 15 * time.Second, leaderElection: true},
		"shorter than a Lease of its own":    {lease: 2 * time.Second, lostAfter: time.Second, leaderElection: true},
		"longer than a Lease of its own":     {lease: 2 * time.Second, lostAfter: 3 * time.Second, leaderElection: true, ok: true},
		"not judged without leader election": {lostAfter: time.Second, ok: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := Options{Node: "node-a", Driver: fake.New("node-a"), LeaderElection: c.leaderElection, LeaseDuration: c.lease, NodeLostAfter: c.lostAfter}
			err := o.defaults()
			if (err == nil) != c.ok {
				t.Fatalf("defaults() = %v, want ok=%v", err, c.ok)
			}
			if c.ok && c.lostAfter == 0 && o.NodeLostAfter != DefaultNodeLostAfter {
				t.Fatalf("default node-lost-after %s, want %s", o.NodeLostAfter, DefaultNodeLostAfter)
			}
		})
	}
}
