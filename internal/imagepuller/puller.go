// Package imagepuller pulls images for Sandboxes in the background, one pull per image and credentials.
package imagepuller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Pull timing.
const (
	pullRetryMin   = time.Second      // a failed pull of an image is tried again after this, doubling...
	pullRetryMax   = 30 * time.Second // ...up to this
	pullMemory     = time.Hour        // how long an ended pull is remembered: the longest startup deadline
	progressWakeup = time.Second      // waiters hear of a pull's progress at most this often
)

// Puller pulls images in the background, outside every reconcile pass, one pull per image and
// credentials at a time however many Sandboxes wait for it. A pass asks for what it needs and reads where
// the pull stands; the puller wakes the pull's waiters when a layer is done and when it ends. A pull lasts
// until the latest startup deadline among its waiters, so that no pull outlives every Sandbox needing it.
// Failures of one image are tried again with a backoff shared by all its waiters, so that a registry is
// never hammered by many Sandboxes at once.
type Puller struct {
	ctx     context.Context
	driver  dd.Driver
	records *Records // which credentials brought each image pulled
	// maxBytes caps one image's size, compressed as announced during the pull, unpacked as the disk grows
	// during it (when watched) and after it; 0: no cap (see TooLargeError).
	maxBytes int64
	usage    Usage                      // the file system Docker unpacks into; nil: not watched (WatchDisk)
	wake     func(types.NamespacedName) // brings a pass over a waiting Sandbox

	mu    sync.Mutex
	pulls map[string]*pull // the latest pull of each image and credentials
}

// New pulls through driver until ctx ends, keeping in records what each pull brought with which
// credentials, refusing images larger than maxBytes (0: no cap), and waking waiters through wake.
func New(ctx context.Context, driver dd.Driver, records *Records, maxBytes int64, wake func(types.NamespacedName)) *Puller {
	return &Puller{ctx: ctx, driver: driver, records: records, maxBytes: maxBytes, wake: wake, pulls: map[string]*pull{}}
}

// Request is what one start of a Sandbox needs.
type Request struct {
	Ref    string
	Auth   *dd.RegistryAuth     // nil: anonymous
	Waiter types.NamespacedName // the Sandbox, woken as the pull moves on
	Start  string               // which start of it waits (UID and topology generation): each waits on a pull once
	Until  time.Time            // the start's deadline: it needs no pull past this
}

// State is where the pull a request waits on stands.
type State struct {
	Pulling  bool
	Started  time.Time
	Ended    time.Time
	Progress dd.PullProgress
	Waiters  int           // Sandboxes waiting on the pull
	Result   dd.PullResult // once ended without an error
	Err      error         // once ended with an error; a classified driver error
	RetryAt  time.Time     // when a failed pull may be tried again
	News     bool          // the waiter hears for the first time that this pull started or ended
}

// pull is one pull of an image with one set of credentials; after it ends it stays as that key's latest.
type pull struct {
	ref      string
	auth     *dd.RegistryAuth
	started  time.Time
	until    time.Time
	cancel   context.CancelFunc
	expiry   *time.Timer
	progress dd.PullProgress
	tooLarge int64 // the bytes found when the pull was stopped for the cap
	// unpacking: stopped for what the disk took (tooLarge is what it unpacked), not the layers announced.
	unpacking   bool
	watched     bool               // the disk was read at its start
	diskAtStart int64              // the bytes the disk held then
	together    int                // the most pulls that ran at once while it ran, itself included
	woke        time.Time          // when waiters last heard of progress
	waiters     map[string]*waiter // by start

	ended    time.Time // zero while it runs
	result   dd.PullResult
	err      error
	failures int // failed pulls of the key in a row, this one included
	retryAt  time.Time
}

// waiter is one start waiting on a pull.
type waiter struct {
	key  types.NamespacedName
	told bool // it heard how the pull ended
}

// Pull returns where a new pull of req's image stands: the one running (which req joins), a failed one
// whose backoff has not run out, or else one it starts.
func (p *Puller) Pull(req Request) State {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.forget(now)
	key := pullKey(req.Ref, req.Auth)
	pl := p.pulls[key]
	switch {
	case pl != nil && pl.ended.IsZero():
		return pl.join(req)
	case pl != nil && pl.err != nil && now.Before(pl.retryAt):
		return pl.tell(req.Start)
	}
	next := &pull{ref: req.Ref, auth: req.Auth, started: now, until: req.Until, waiters: map[string]*waiter{}}
	if pl != nil && pl.err != nil {
		next.failures = pl.failures
	}
	p.pulls[key] = next
	p.count(next)
	p.start(next)
	return next.join(req)
}

// Joined returns the running pull of req's image and credentials if req's start waits on it. The image can
// show on the node before its pull has ended (the daemon has it, the puller has yet to look at it and record
// it), so a start that joined a pull waits for its end rather than going by the image alone: the end is news
// to it, and what the pull brought is checked (Brought).
func (p *Puller) Joined(req Request) (State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pl := p.pulls[pullKey(req.Ref, req.Auth)]
	if pl == nil || !pl.ended.IsZero() || pl.waiters[req.Start] == nil {
		return State{}, false
	}
	return pl.state(), true
}

// Brought returns the latest pull of req's image and credentials if req's start waited on it and it ended
// with the image on the node: what it brought is to be checked, and its end is news once.
func (p *Puller) Brought(req Request) (State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pl := p.pulls[pullKey(req.Ref, req.Auth)]
	if pl == nil || pl.ended.IsZero() || pl.err != nil || pl.waiters[req.Start] == nil {
		return State{}, false
	}
	return pl.tell(req.Start), true
}

// count notes how many pulls run at once now that pl starts, on pl and on every other running pull.
func (p *Puller) count(pl *pull) {
	var running []*pull
	for _, other := range p.pulls {
		if other.ended.IsZero() {
			running = append(running, other)
		}
	}
	for _, r := range running {
		r.together = max(r.together, len(running))
	}
	pl.diskAtStart, pl.watched = p.used()
}

// start runs the pull in the background until it ends, ctx ends, or its last waiter's deadline passes.
func (p *Puller) start(pl *pull) {
	ctx, cancel := context.WithCancel(p.ctx)
	pl.cancel = cancel
	pl.expiry = time.AfterFunc(time.Until(pl.until), func() { p.expire(pl) })
	done := make(chan struct{})
	if pl.watched {
		go p.watchUnpacking(pl, done)
	}
	go func() {
		res, err := p.fetch(ctx, pl)
		close(done)
		p.finish(pl, res, err)
	}()
}

// fetch makes the pull and records which credentials brought what (see Records). A pull whose image cannot
// be looked at afterwards failed: what it brought is unknown, so it is no news to anyone waiting.
func (p *Puller) fetch(ctx context.Context, pl *pull) (dd.PullResult, error) {
	if pl.auth != nil {
		if err := p.records.pulling(pl.ref); err != nil {
			return dd.PullResult{}, dd.NewError(dd.KindUncertain, dd.PhaseImage, pl.ref, "the agent could not record the pull: "+err.Error())
		}
	}
	res, err := p.driver.PullImage(ctx, pl.ref, pl.auth, func(pr dd.PullProgress) { p.progressed(pl, pr) })
	if big := p.tooLargeError(pl); big != nil {
		return dd.PullResult{}, big
	}
	if err != nil {
		return res, fmt.Errorf("pulling %s: %w", pl.ref, err)
	}
	img, err := p.driver.InspectImage(ctx, pl.ref)
	switch {
	case err != nil:
		return dd.PullResult{}, fmt.Errorf("inspecting the pulled image %s: %w", pl.ref, err)
	case !img.Exists:
		return dd.PullResult{}, dd.NewError(dd.KindUncertain, dd.PhaseImage, pl.ref, "the pulled image was gone at once")
	}
	if err := p.checkPulledSize(ctx, pl.ref, img); err != nil {
		return dd.PullResult{}, err
	}
	if err := p.records.pulled(pl.ref, img.ID, pl.auth); err != nil {
		return dd.PullResult{}, dd.NewError(dd.KindUncertain, dd.PhaseImage, pl.ref, "the agent could not record the pull: "+err.Error())
	}
	return res, nil
}

// Usable tells whether an image the node holds, of ID id and named ref, may be used with auth without
// asking its registry (see Records).
func (p *Puller) Usable(ref, id string, auth *dd.RegistryAuth) bool {
	return p.records.Usable(ref, id, auth)
}

// Refused returns the latest pull of req's image and credentials if the registry refused it (the
// credentials, or the image for them): asking again with the same credentials would get the same answer.
// Its end is news once to a start that waited on it.
func (p *Puller) Refused(req Request) (State, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pl := p.pulls[pullKey(req.Ref, req.Auth)]
	if pl == nil || pl.err == nil || !refusal(pl.err) {
		return State{}, false
	}
	return pl.tell(req.Start), true
}

// refusal tells the registry's no (refused credentials, or no such image for them) from a failure to ask.
func refusal(err error) bool {
	kind := dd.KindOf(err)
	return kind == dd.KindConflict || kind == dd.KindNotFound
}

// expire ends the pull once the latest deadline among its waiters has passed (it may have moved later).
func (p *Puller) expire(pl *pull) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if left := time.Until(pl.until); left > 0 && pl.ended.IsZero() {
		pl.expiry.Reset(left)
		return
	}
	pl.cancel()
}

func (p *Puller) progressed(pl *pull, pr dd.PullProgress) {
	p.mu.Lock()
	moved := pr.LayersDone != pl.progress.LayersDone && time.Since(pl.woke) >= progressWakeup
	pl.progress = pr
	p.tooLargeMidPull(pl, pr)
	if moved {
		pl.woke = time.Now()
	}
	waiters := pl.waiterKeys()
	p.mu.Unlock()
	if moved {
		p.wakeAll(waiters)
	}
}

func (p *Puller) finish(pl *pull, res dd.PullResult, err error) {
	p.mu.Lock()
	pl.expiry.Stop()
	pl.cancel()
	pl.ended, pl.result, pl.err = time.Now(), res, err
	if err != nil {
		pl.failures++
		pl.retryAt = pl.ended.Add(min(pullRetryMin<<min(pl.failures-1, 10), pullRetryMax))
		if errors.As(err, new(*TooLargeError)) {
			pl.retryAt = pl.ended.Add(pullMemory) // it would be as large again: not within any start's deadline
		}
	}
	waiters := pl.waiterKeys()
	p.mu.Unlock()
	p.wakeAll(waiters)
}

func (p *Puller) wakeAll(waiters []types.NamespacedName) {
	for _, w := range waiters {
		p.wake(w)
	}
}

// forget drops pulls that ended longer ago than any waiter could still need them.
func (p *Puller) forget(now time.Time) {
	for key, pl := range p.pulls {
		if !pl.ended.IsZero() && now.Sub(pl.ended) > pullMemory {
			delete(p.pulls, key)
		}
	}
}

// join adds a start to a running pull's waiters, keeping the pull going until its deadline too.
func (pl *pull) join(req Request) State {
	_, known := pl.waiters[req.Start]
	if !known {
		pl.waiters[req.Start] = &waiter{key: req.Waiter}
	}
	if req.Until.After(pl.until) {
		pl.until = req.Until
	}
	st := pl.state()
	st.News = !known
	return st
}

// tell reports an ended pull; it is news to a start that waited on it the first time only.
func (pl *pull) tell(start string) State {
	st := pl.state()
	if w := pl.waiters[start]; w != nil {
		st.News = !w.told
		w.told = true
	}
	return st
}

func (pl *pull) state() State {
	return State{
		Pulling: pl.ended.IsZero(), Started: pl.started, Ended: pl.ended, Progress: pl.progress,
		Waiters: len(pl.waiters), Result: pl.result, Err: pl.err, RetryAt: pl.retryAt,
	}
}

func (pl *pull) waiterKeys() []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(pl.waiters))
	for _, w := range pl.waiters {
		out = append(out, w.key)
	}
	return out
}

// pullKey tells pulls apart by image and credentials: a Sandbox never waits on a pull made with credentials
// other than its own, so a pull another Sandbox could not make fails for it as it would alone.
func pullKey(ref string, auth *dd.RegistryAuth) string {
	if auth == nil {
		return ref
	}
	return ref + "\x00" + credentialHash(*auth)
}
