package nodelifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// patientLock is the Lease lock of the agent that holds its node's host lock: the one agent of the node on this
// host. An API server that does not answer is no reason for it to stop acting for its node, as a kubelet keeps
// its pods through an outage (docs/agent.md, "When the API server is out"). So while it leads, a renewal the API
// server did not answer counts as made, and a read it did not answer returns the Lease as last known. It stands
// down only on an answer: the API server refuses its renewal (another agent changed the Lease) or shows the
// Lease held by another identity; from then on it passes every answer on as it is, and client-go's leader
// election ends the agent at its renew deadline, as it ends any agent that lost its Lease.
type patientLock struct {
	resourcelock.Interface
	log logr.Logger

	mu       sync.Mutex
	last     *resourcelock.LeaderElectionRecord // last held by this agent, as written or read; nil: not leading
	lastRaw  []byte
	outSince time.Time // first unanswered call of the current outage; zero when the API server answers
	lost     bool      // another agent was seen holding the Lease: no more patience
}

// Get reads the Lease; while this agent leads and the API server does not answer, the Lease as last known.
func (l *patientLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.answered()
		if l.last != nil && rec.HolderIdentity != l.Identity() {
			l.standDown(rec.HolderIdentity)
		} else if l.last != nil {
			l.last, l.lastRaw = rec, raw
		}
		return rec, raw, nil
	case l.patient(err):
		rec, raw := *l.last, l.lastRaw
		return &rec, raw, nil
	}
	return nil, nil, err //nolint:wrapcheck // client-go's leader election reads the API server's answer as it is
}

// Create creates the Lease; this agent leads from then on.
func (l *patientLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	if err := l.Interface.Create(ctx, rec); err != nil {
		return err //nolint:wrapcheck // client-go's leader election reads the API server's answer as it is
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held(rec)
	return nil
}

// Update renews or takes the Lease; while this agent leads and the API server does not answer, the renewal
// counts as made.
func (l *patientLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, rec)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.answered()
		l.held(rec)
		return nil
	case l.patient(err) && rec.HolderIdentity == l.Identity():
		return nil
	}
	return err //nolint:wrapcheck // client-go's leader election reads the API server's answer as it is
}

// held records rec, written by this agent, as the Lease it now holds.
func (l *patientLock) held(rec resourcelock.LeaderElectionRecord) {
	if l.lost || rec.HolderIdentity != l.Identity() {
		return
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return // a record of strings and times always encodes; without it this agent is merely not patient
	}
	l.last, l.lastRaw = &rec, raw
}

// patient tells whether err is no answer from the API server while this agent leads, and notes the outage.
func (l *patientLock) patient(err error) bool {
	if l.last == nil || l.lost || answered(err) {
		return false
	}
	if l.outSince.IsZero() {
		l.outSince = time.Now()
		l.log.Info("The API server does not answer; acting on for this node with what the agent last knew",
			"lease", l.Describe(), "reason", err.Error())
	}
	return true
}

// answered ends the outage in the log.
func (l *patientLock) answered() {
	if !l.outSince.IsZero() {
		l.log.Info("The API server answers again", "lease", l.Describe(), "outage", time.Since(l.outSince).Round(time.Second))
		l.outSince = time.Time{}
	}
}

func (l *patientLock) standDown(holder string) {
	if !l.lost {
		l.log.Info("Another agent holds this node's Lease; standing down", "lease", l.Describe(), "holder", holder)
	}
	l.lost, l.last, l.lastRaw = true, nil, nil
}

// answered tells whether err is an answer of the API server about the Lease: a refusal (conflict, not found,
// forbidden, invalid) rather than an outage (no connection, a timeout, a 5xx, 429 Too Many Requests).
func answered(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	return code != 0 && code < 500 && code != 429
}
