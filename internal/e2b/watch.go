package e2b

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem"
)

// The data plane has no notifications of changes to files, so a watcher lists its directory through the
// files subresource and compares what it sees with what it saw (docs/e2b.md, "Watching directories").
// These bound what that costs.
type watchLimits struct {
	poll       time.Duration // how often WatchDir looks
	entries    int           // entries one watcher compares
	dirs       int           // directories a recursive watcher lists per look
	perSandbox int           // watchers of one Sandbox in this gateway, both kinds
	total      int           // watchers of this gateway, both kinds
	idle       time.Duration // a polled watcher not read for that long is removed
}

var defaultWatchLimits = watchLimits{poll: time.Second, entries: 10000, dirs: 64, perSandbox: 4, total: 128, idle: 10 * time.Minute}

// entryState is what a look keeps of one entry to compare it with the next.
type entryState struct {
	typ   string
	size  int64
	mtime time.Time
	mode  string
	link  string // a symlink's target, for the events' entries
}

// snapshot is a look at a watched directory: its entries by path relative to it.
type snapshot map[string]entryState

// look lists root (and with recursive its subdirectories, breadth first) within the limits.
func (l watchLimits) look(ctx context.Context, p *sandboxPlane, root string, recursive bool) (snapshot, error) {
	snap := snapshot{}
	queue := []string{""}
	for listed := 0; len(queue) > 0; listed++ {
		rel := queue[0]
		queue = queue[1:]
		if listed == l.dirs {
			return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s holds more than %d directories, more than a watcher of Dockside's E2B gateway lists: watch a subdirectory", root, l.dirs))
		}
		items, err := p.list(ctx, path.Join(root, rel))
		if err != nil {
			if rel != "" && codeOf(err) == http.StatusNotFound {
				continue // removed since its parent was listed: the next look says so
			}
			return nil, connectError(err)
		}
		for _, it := range items {
			name := path.Join(rel, it.Name)
			snap[name] = entryState{typ: it.Type, size: it.Size, mtime: it.Mtime, mode: it.Mode, link: it.Link}
			if len(snap) > l.entries {
				return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s holds more than %d entries, more than a watcher of Dockside's E2B gateway compares: watch a subdirectory", root, l.entries))
			}
			if recursive && it.Type == "dir" {
				queue = append(queue, name)
			}
		}
	}
	return snap, nil
}

// changes are the events that lead from before to after, as envd's inotify watcher names them: paths
// relative to the watched directory; a new file CREATE, and WRITE when it has content; a gone one REMOVE,
// or RENAME when a new one of the same type, size and time appeared (then also CREATE of the new name); a
// file whose size or time changed WRITE; a changed mode CHMOD. Events come in order of name.
func changes(before, after snapshot) []*filesystem.FilesystemEvent {
	var created, removed []string
	for name := range after {
		if _, ok := before[name]; !ok {
			created = append(created, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			removed = append(removed, name)
		}
	}
	slices.Sort(created)
	slices.Sort(removed)
	type event struct {
		name string
		typ  filesystem.EventType
	}
	var evs []event
	renamed := map[string]bool{} // created names that a rename explains
	for _, old := range removed {
		typ := filesystem.EventType_EVENT_TYPE_REMOVE
		for _, name := range created {
			if was, is := before[old], after[name]; !renamed[name] && was.typ == is.typ && was.size == is.size && was.mtime.Equal(is.mtime) {
				renamed[name], typ = true, filesystem.EventType_EVENT_TYPE_RENAME
				break
			}
		}
		evs = append(evs, event{old, typ})
	}
	for _, name := range created {
		evs = append(evs, event{name, filesystem.EventType_EVENT_TYPE_CREATE})
		if is := after[name]; !renamed[name] && is.typ == "file" && is.size > 0 {
			evs = append(evs, event{name, filesystem.EventType_EVENT_TYPE_WRITE})
		}
	}
	for name, is := range after {
		was, ok := before[name]
		if !ok {
			continue
		}
		// A directory's own time moves with its entries, which have events of their own.
		if is.typ != "dir" && (was.size != is.size || !was.mtime.Equal(is.mtime)) {
			evs = append(evs, event{name, filesystem.EventType_EVENT_TYPE_WRITE})
		}
		if was.mode != is.mode {
			evs = append(evs, event{name, filesystem.EventType_EVENT_TYPE_CHMOD})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	out := make([]*filesystem.FilesystemEvent, len(evs))
	for i, e := range evs {
		out[i] = &filesystem.FilesystemEvent{Name: e.name, Type: e.typ}
	}
	return out
}

// withEntries gives each event of evs whose entry is in after, the look that found them, its EntryInfo
// (path under root), as envd does when the watch asked include_entry: every event but REMOVE and RENAME,
// whose name is gone. The entry is what the look saw, not a stat of its own.
func withEntries(evs []*filesystem.FilesystemEvent, after snapshot, root string) []*filesystem.FilesystemEvent {
	for _, e := range evs {
		is, ok := after[e.GetName()]
		if !ok || e.GetType() == filesystem.EventType_EVENT_TYPE_REMOVE || e.GetType() == filesystem.EventType_EVENT_TYPE_RENAME {
			continue
		}
		e.Entry = entryOf(fileInfo{Size: is.size, Mode: is.mode, Mtime: is.mtime, Type: is.typ, Link: is.link}, path.Join(root, e.GetName()))
	}
	return evs
}

// polledWatcher is a watcher of CreateWatcher: it looks when it is read, so it holds no key and costs
// nothing between reads.
type polledWatcher struct {
	sandbox   string // namespace/name
	user      string // who created it: only they read it
	path      string
	recursive bool
	entries   bool // include_entry: events carry their entry's EntryInfo

	mu   sync.Mutex // one read at a time
	last snapshot
	used time.Time
}

// watchers counts the watchers of the gateway and holds its polled ones, which live in this gateway only.
type watchers struct {
	limits watchLimits

	mu     sync.Mutex
	polled map[string]*polledWatcher
	count  map[string]int // by Sandbox, both kinds
}

func newWatchers(l watchLimits) *watchers {
	return &watchers{limits: l, polled: map[string]*polledWatcher{}, count: map[string]int{}}
}

// reserveLocked counts a new watcher of the Sandbox, or refuses it past the limits; w.mu is held.
func (w *watchers) reserveLocked(sandbox string) error {
	w.sweepLocked()
	total := 0
	for _, n := range w.count {
		total += n
	}
	switch {
	case w.count[sandbox] >= w.limits.perSandbox:
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("sandbox %s has %d watchers already, the most Dockside's E2B gateway keeps: stop one first", sandbox, w.limits.perSandbox))
	case total >= w.limits.total:
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("the gateway keeps %d watchers already, its most: stop one first", w.limits.total))
	}
	w.count[sandbox]++
	return nil
}

func (w *watchers) releaseLocked(sandbox string) {
	if w.count[sandbox]--; w.count[sandbox] <= 0 {
		delete(w.count, sandbox)
	}
}

// sweepLocked removes the polled watchers nobody read for limits.idle.
func (w *watchers) sweepLocked() {
	for id, pw := range w.polled {
		if pw.mu.TryLock() {
			idle := time.Since(pw.used) > w.limits.idle
			pw.mu.Unlock()
			if idle {
				w.removeLocked(id, pw)
			}
		}
	}
}

func (w *watchers) removeLocked(id string, pw *polledWatcher) {
	delete(w.polled, id)
	w.releaseLocked(pw.sandbox)
}

// stream counts a WatchDir stream while it lasts: release ends it.
func (w *watchers) stream(sandbox string) (release func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.reserveLocked(sandbox); err != nil {
		return nil, err
	}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.releaseLocked(sandbox)
	}, nil
}

// add keeps a polled watcher and returns its ID.
func (w *watchers) add(pw *polledWatcher) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.reserveLocked(pw.sandbox); err != nil {
		return "", err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	pw.used = time.Now()
	w.polled[id] = pw
	return id, nil
}

// get is the caller's polled watcher of that ID in that Sandbox; another's is not found, as a missing one.
func (w *watchers) get(id, sandbox, user string) (*polledWatcher, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pw := w.polled[id]
	if pw == nil || pw.sandbox != sandbox || pw.user != user {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("watcher %q not found: it was removed, was left unread for %s, or is another gateway's", id, w.limits.idle))
	}
	return pw, nil
}

func (w *watchers) remove(id string, pw *polledWatcher) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.polled[id] == pw {
		w.removeLocked(id, pw)
	}
}

// dropSandbox removes the polled watchers of a Sandbox that was killed.
func (w *watchers) dropSandbox(sandbox string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, pw := range w.polled {
		if pw.sandbox == sandbox {
			w.removeLocked(id, pw)
		}
	}
}

// watched resolves a watch's directory: the caller, its data plane, the absolute path, which must be a
// directory, and the Sandbox's key in the registry.
func (s *filesystemService) watched(ctx context.Context, p string) (*caller, *sandboxPlane, string, error) {
	c, plane, err := s.g.target(ctx)
	if err != nil {
		return nil, nil, "", connectError(err)
	}
	abs, err := absolute(ctx, c, plane.name, p)
	if err != nil {
		return nil, nil, "", connectError(err)
	}
	info, err := plane.stat(ctx, abs)
	if err != nil {
		return nil, nil, "", connectError(err)
	}
	if info.Type != "dir" {
		return nil, nil, "", connect.NewError(connect.CodeInvalidArgument, errors.New(abs+" is not a directory"))
	}
	return c, plane, abs, nil
}

func sandboxKey(c *caller, p *sandboxPlane) string { return c.namespace + "/" + p.name }

func (s *filesystemService) WatchDir(ctx context.Context, req *connect.Request[filesystem.WatchDirRequest], stream *connect.ServerStream[filesystem.WatchDirResponse]) error {
	w := s.g.watchers
	c, p, abs, err := s.watched(ctx, req.Msg.GetPath())
	if err != nil {
		return err
	}
	release, err := w.stream(sandboxKey(c, p))
	if err != nil {
		return err
	}
	defer release()
	last, err := w.limits.look(ctx, p, abs, req.Msg.GetRecursive())
	if err != nil {
		return err
	}
	send := func(r *filesystem.WatchDirResponse) error {
		if err := stream.Send(r); err != nil {
			return fmt.Errorf("sending a watch event: %w", err)
		}
		return nil
	}
	if err := send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Start{Start: &filesystem.WatchDirResponse_StartEvent{}}}); err != nil {
		return err
	}
	poll := time.NewTicker(w.limits.poll)
	defer poll.Stop()
	keepalive := time.NewTicker(keepaliveOf(req.Header()))
	defer keepalive.Stop()
	for {
		select {
		case <-ctx.Done():
			return connectError(ctx.Err())
		case <-keepalive.C:
			if err := send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Keepalive{Keepalive: &filesystem.WatchDirResponse_KeepAlive{}}}); err != nil {
				return err
			}
		case <-poll.C:
			next, err := w.limits.look(ctx, p, abs, req.Msg.GetRecursive())
			if err != nil {
				return err // the directory, or the Sandbox, is gone: the stream ends with it
			}
			evs := changes(last, next)
			if req.Msg.GetIncludeEntry() {
				evs = withEntries(evs, next, abs)
			}
			for _, ev := range evs {
				if err := send(&filesystem.WatchDirResponse{Event: &filesystem.WatchDirResponse_Filesystem{Filesystem: ev}}); err != nil {
					return err
				}
			}
			last = next
		}
	}
}

func (s *filesystemService) CreateWatcher(ctx context.Context, req *connect.Request[filesystem.CreateWatcherRequest]) (*connect.Response[filesystem.CreateWatcherResponse], error) {
	w := s.g.watchers
	c, p, abs, err := s.watched(ctx, req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	snap, err := w.limits.look(ctx, p, abs, req.Msg.GetRecursive())
	if err != nil {
		return nil, err
	}
	id, err := w.add(&polledWatcher{sandbox: sandboxKey(c, p), user: c.user, path: abs, recursive: req.Msg.GetRecursive(), entries: req.Msg.GetIncludeEntry(), last: snap})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&filesystem.CreateWatcherResponse{WatcherId: id}), nil
}

func (s *filesystemService) GetWatcherEvents(ctx context.Context, req *connect.Request[filesystem.GetWatcherEventsRequest]) (*connect.Response[filesystem.GetWatcherEventsResponse], error) {
	w := s.g.watchers
	c, p, err := s.g.target(ctx)
	if err != nil {
		return nil, connectError(err)
	}
	pw, err := w.get(req.Msg.GetWatcherId(), sandboxKey(c, p), c.user)
	if err != nil {
		return nil, err
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.used = time.Now()
	next, err := w.limits.look(ctx, p, pw.path, pw.recursive)
	if connect.CodeOf(err) == connect.CodeNotFound {
		w.remove(req.Msg.GetWatcherId(), pw) // its directory, or its Sandbox, is gone
	}
	if err != nil {
		return nil, err
	}
	evs := changes(pw.last, next)
	if pw.entries {
		evs = withEntries(evs, next, pw.path)
	}
	pw.last = next
	return connect.NewResponse(&filesystem.GetWatcherEventsResponse{Events: evs}), nil
}

func (s *filesystemService) RemoveWatcher(ctx context.Context, req *connect.Request[filesystem.RemoveWatcherRequest]) (*connect.Response[filesystem.RemoveWatcherResponse], error) {
	c, p, err := s.g.target(ctx)
	if err != nil {
		return nil, connectError(err)
	}
	pw, err := s.g.watchers.get(req.Msg.GetWatcherId(), sandboxKey(c, p), c.user)
	if err != nil {
		return nil, err
	}
	s.g.watchers.remove(req.Msg.GetWatcherId(), pw)
	return connect.NewResponse(&filesystem.RemoveWatcherResponse{}), nil
}
