// Package nodelifecycle marks the Sandboxes of lost nodes: a node is lost when its agent has not renewed its
// Lease for longer than a bound, and one live agent then says so on the node's Sandboxes (NodeLost=True,
// Ready=Unknown) and does nothing else to them (docs/deploy.md, "When a host is lost").
package nodelifecycle

import (
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// LeasePrefix starts the name of every agent's Lease: dockside-agent-<node> (LeaseName).
const LeasePrefix = "dockside-agent-"

// LeaseName is the name of the Lease an agent holds for node.
func LeaseName(node string) string { return LeasePrefix + node }

// sighting is what this agent last saw of one node's Lease, and when (by its own clock) it saw it change.
// Loss is judged by this agent's clock only, as client-go's leader election judges a Lease, so that clocks
// that disagree between hosts never make a node look lost.
type sighting struct {
	holder  string
	renewed time.Time // the Lease's renewTime, by its holder's clock; zero when it has none
	changed time.Time // this agent's clock when the Lease last changed in its sight
}

// book holds the sightings of every node's Lease, as seen by the agent of node self.
type book struct {
	self      string
	lostAfter time.Duration
	nodes     map[string]sighting
}

func newBook(self string, lostAfter time.Duration) *book {
	return &book{self: self, lostAfter: lostAfter, nodes: map[string]sighting{}}
}

// observe records the Leases as listed at now. A Lease seen for the first time counts as changed now: a
// node is never judged lost before this agent has watched it for lostAfter. A node whose Lease is gone is
// forgotten (its Sandboxes are no longer judged). When this agent's own Lease changes after looking
// unrenewed for longer than lostAfter, it was this agent that could not see (an API server out, a broken
// watch), not the others that stopped: every node's clock starts again, so that the agents that rode out the
// same outage get the time to renew before they are judged.
func (b *book) observe(leases []coordinationv1.Lease, now time.Time) {
	if b.blindUntil(leases, now) {
		for node, s := range b.nodes {
			s.changed = now
			b.nodes[node] = s
		}
	}
	seen := map[string]bool{}
	for i := range leases {
		node, ok := strings.CutPrefix(leases[i].Name, LeasePrefix)
		if !ok || node == "" {
			continue
		}
		seen[node] = true
		s := sightingOf(&leases[i])
		if old, ok := b.nodes[node]; ok && old.holder == s.holder && old.renewed.Equal(s.renewed) {
			continue
		}
		s.changed = now
		b.nodes[node] = s
	}
	for node := range b.nodes {
		if !seen[node] {
			delete(b.nodes, node)
		}
	}
}

// blindUntil tells whether leases show this agent's own Lease renewed after it looked unrenewed for longer
// than lostAfter: this agent's view of the Leases was stale until now.
func (b *book) blindUntil(leases []coordinationv1.Lease, now time.Time) bool {
	old, ok := b.nodes[b.self]
	if !ok || now.Sub(old.changed) <= b.lostAfter {
		return false
	}
	for i := range leases {
		if leases[i].Name == LeaseName(b.self) {
			return !b.unchanged(b.self, &leases[i])
		}
	}
	return false
}

// blind tells whether this agent's own Lease looks unrenewed for longer than lostAfter: its view of every
// Lease is stale, and it judges no node until it sees its own renewals again.
func (b *book) blind(now time.Time) bool {
	s, ok := b.nodes[b.self]
	return ok && now.Sub(s.changed) > b.lostAfter
}

func sightingOf(l *coordinationv1.Lease) sighting {
	s := sighting{}
	if l.Spec.HolderIdentity != nil {
		s.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		s.renewed = l.Spec.RenewTime.Time
	}
	return s
}

// split sorts the nodes at now into fresh ones (their Lease changed within lostAfter) and lost ones, each
// sorted by name. A Lease released by an agent that stopped cleanly (no holder) ages like any other: if no
// agent takes it within lostAfter, the node is lost.
func (b *book) split(now time.Time) (fresh, lost []string) {
	for node, s := range b.nodes {
		if now.Sub(s.changed) > b.lostAfter {
			lost = append(lost, node)
		} else {
			fresh = append(fresh, node)
		}
	}
	sort.Strings(fresh)
	sort.Strings(lost)
	return fresh, lost
}

// unchanged tells whether l is still the Lease last seen of node: the node is still lost.
func (b *book) unchanged(node string, l *coordinationv1.Lease) bool {
	old, ok := b.nodes[node]
	s := sightingOf(l)
	return ok && old.holder == s.holder && old.renewed.Equal(s.renewed)
}

// writes is the rule of who marks lost nodes' Sandboxes, so that agents do not all write the same thing: the
// live agent whose node sorts first among the nodes with fresh Leases (self is live, as it holds its Lease).
// It takes no election: every agent decides from the same Leases, and when the writer dies the next in order
// takes over once the writer's Lease is stale. Agents that see the Leases differently for a moment write the
// same conditions, guarded by resourceVersion, so that a second write is refused or changes nothing.
func writes(self string, fresh []string) bool {
	for _, node := range fresh {
		if node < self {
			return false
		}
	}
	return true
}
