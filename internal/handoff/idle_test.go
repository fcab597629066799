package handoff

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// thawLog records thaws; names in gone answer NotFound, fail fails every thaw.
type thawLog struct {
	thawed []string
	gone   map[string]bool
	fail   bool
}

func (l *thawLog) UnpauseContainer(_ context.Context, name string) error {
	switch {
	case l.fail:
		return errors.New("daemon said no")
	case l.gone[name]:
		return dd.NewError(dd.KindNotFound, dd.PhasePause, name, "no such container")
	}
	l.thawed = append(l.thawed, name)
	return nil
}

// TestIdlePausesOnlyAfterQuietAndUseThawsFirst: a freeze comes only once nothing ran for the whole time and
// nothing runs now; a use thaws in the reverse order of the freeze (the primary last), says so, and keeps the
// Sandbox awake until it is done.
func TestIdlePausesOnlyAfterQuietAndUseThawsFirst(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1000, 0)
	thaws := &thawLog{gone: map[string]bool{}}
	var resumed []types.NamespacedName
	i := &Idle{Thaw: thaws, Now: func() time.Time { return now }, Wake: func(k types.NamespacedName) { resumed = append(resumed, k) }}
	key, uid := types.NamespacedName{Namespace: "ns", Name: "s"}, types.UID("u")
	freezes := 0
	freeze := func() ([]string, error) { freezes++; return []string{"primary", "db"}, nil }

	paused, wait, err := i.PauseIfIdle(uid, time.Minute, freeze)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect([]any{paused, wait, freezes}).To(Equal([]any{false, time.Minute, 0}), "counted from the first time it is seen")

	now = now.Add(30 * time.Second)
	done, resumedNow, err := i.Use(context.Background(), key, uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resumedNow).To(BeFalse())
	now = now.Add(2 * time.Minute)
	paused, _, _ = i.PauseIfIdle(uid, time.Minute, freeze)
	g.Expect(paused).To(BeFalse(), "a call going on keeps it awake however long it lasts")
	done()
	done() // a second done counts once
	paused, wait, _ = i.PauseIfIdle(uid, time.Minute, freeze)
	g.Expect([]any{paused, wait}).To(Equal([]any{false, time.Minute}), "counted again from the call's end")

	now = now.Add(time.Minute)
	paused, _, _ = i.PauseIfIdle(uid, time.Minute, freeze)
	g.Expect([]any{paused, freezes, i.Paused(uid)}).To(Equal([]any{true, 1, true}))
	paused, _, _ = i.PauseIfIdle(uid, time.Minute, freeze)
	g.Expect([]any{paused, freezes}).To(Equal([]any{true, 1}), "frozen once")

	done, resumedNow, err = i.Use(context.Background(), key, uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resumedNow).To(BeTrue())
	g.Expect(thaws.thawed).To(Equal([]string{"db", "primary"}), "services first, the primary last")
	g.Expect(resumed).To(Equal([]types.NamespacedName{key}))
	g.Expect(i.Paused(uid)).To(BeFalse())
	done()
	g.Expect(i.Paused("other")).To(BeFalse())
}

// TestIdleThawSkipsGoneContainersAndKeepsFailures: a container gone since the freeze has nothing to thaw; a
// thaw Docker refuses leaves the Sandbox frozen and the call unmarked, so the next call tries again.
func TestIdleThawSkipsGoneContainersAndKeepsFailures(t *testing.T) {
	g := NewWithT(t)
	now := time.Unix(1000, 0)
	thaws := &thawLog{gone: map[string]bool{"db": true}, fail: true}
	i := &Idle{Thaw: thaws, Now: func() time.Time { return now }}
	key, uid := types.NamespacedName{Namespace: "ns", Name: "s"}, types.UID("u")
	_, _, _ = i.PauseIfIdle(uid, time.Second, nil)
	now = now.Add(time.Minute)
	paused, _, err := i.PauseIfIdle(uid, time.Second, func() ([]string, error) { return []string{"primary", "db"}, nil })
	g.Expect([]any{paused, err}).To(Equal([]any{true, nil}))

	_, _, err = i.Use(context.Background(), key, uid)
	g.Expect(err).To(MatchError(ContainSubstring("resuming Sandbox s from its idle pause")))
	g.Expect(i.Paused(uid)).To(BeTrue())

	thaws.fail = false
	done, resumed, err := i.Use(context.Background(), key, uid)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resumed).To(BeTrue())
	g.Expect(thaws.thawed).To(Equal([]string{"primary"}))
	done()

	i.Forget(uid)
	g.Expect(i.Paused(uid)).To(BeFalse())
	var none *Idle
	done, resumed, err = none.Use(context.Background(), key, uid)
	g.Expect([]any{resumed, err}).To(Equal([]any{false, nil}))
	done()
	paused, _, _ = none.PauseIfIdle(uid, time.Second, nil)
	g.Expect(paused).To(BeFalse())
}

// TestStartAskedOnceAndRemembered: a lazy Sandbox's start is asked for by its first command, which wakes the
// Sandbox reconciler once however many commands ask; it is known until the Sandbox is forgotten.
func TestStartAskedOnceAndRemembered(t *testing.T) {
	g := NewWithT(t)
	var woken []types.NamespacedName
	i := &Idle{Wake: func(k types.NamespacedName) { woken = append(woken, k) }}
	key, uid := types.NamespacedName{Namespace: "ns", Name: "s"}, types.UID("u")
	g.Expect(i.StartAsked(uid)).To(BeFalse())
	i.Start(key, uid)
	i.Start(key, uid)
	g.Expect(i.StartAsked(uid)).To(BeTrue())
	g.Expect(woken).To(Equal([]types.NamespacedName{key}))
	g.Expect(i.StartAsked("other")).To(BeFalse())
	i.Forget(uid)
	g.Expect(i.StartAsked(uid)).To(BeFalse())
	var none *Idle
	none.Start(key, uid)
	g.Expect(none.StartAsked(uid)).To(BeFalse(), "nil asks nothing: its lazy Sandboxes wait")
}
