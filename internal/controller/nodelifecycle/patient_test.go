package nodelifecycle

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaseStore is a Lease lock whose API server answers err, or, when err is nil, holds rec.
type leaseStore struct {
	rec resourcelock.LeaderElectionRecord
	err error
}

func (s *leaseStore) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	rec := s.rec
	return &rec, []byte(rec.HolderIdentity), nil
}

func (s *leaseStore) Create(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return s.Update(context.Background(), rec)
}

func (s *leaseStore) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	if s.err != nil {
		return s.err
	}
	s.rec = rec
	return nil
}

func (*leaseStore) RecordEvent(string)      {}
func (*leaseStore) Identity() string        { return "host_n" }
func (*leaseStore) Describe() string        { return "kube-system/dockside-agent-n" }
func newPatient(s *leaseStore) *patientLock { return &patientLock{Interface: s, log: logr.Discard()} }

var (
	errRefused  = errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	unavailable = apierrors.NewServiceUnavailable("etcd is down")
	conflict    = apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "dockside-agent-n", errors.New("changed"))
)

func TestPatientLockRidesOutAnOutageWhileItLeads(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := &leaseStore{}
	l := newPatient(s)

	s.err = errRefused
	g.Expect(l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n"})).To(MatchError(errRefused),
		"an agent that has not led yet takes nothing for granted")
	_, _, err := l.Get(ctx)
	g.Expect(err).To(MatchError(errRefused))

	s.err = nil
	g.Expect(l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n", LeaseDurationSeconds: 15})).To(Succeed())
	for _, outage := range []error{errRefused, unavailable, context.DeadlineExceeded, apierrors.NewTooManyRequests("busy", 1)} {
		s.err = outage
		g.Expect(l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n"})).To(Succeed(), "%v", outage)
		rec, _, err := l.Get(ctx)
		g.Expect(err).NotTo(HaveOccurred(), "%v", outage)
		g.Expect(rec.HolderIdentity).To(Equal("host_n"), "the Lease as last known")
	}
	s.err = nil
	g.Expect(l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n"})).To(Succeed(), "the API server is back")
	g.Expect(s.rec.HolderIdentity).To(Equal("host_n"))
}

func TestPatientLockStandsDownWhenAnotherHoldsTheLease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := &leaseStore{}
	l := newPatient(s)
	g.Expect(l.Create(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n"})).To(Succeed())

	s.err = conflict
	g.Expect(l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n"})).To(MatchError(conflict),
		"a refusal is an answer, passed on")
	s.err, s.rec = nil, resourcelock.LeaderElectionRecord{HolderIdentity: "other_n"}
	rec, _, err := l.Get(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.HolderIdentity).To(Equal("other_n"))

	s.err = errRefused
	g.Expect(l.Update(ctx, resourcelock.LeaderElectionRecord{HolderIdentity: "host_n"})).To(MatchError(errRefused),
		"once another agent was seen holding the Lease, an outage is no longer ridden out")
	_, _, err = l.Get(ctx)
	g.Expect(err).To(MatchError(errRefused))
}
