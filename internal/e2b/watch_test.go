package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/filesystem/filesystemconnect"
)

// fakeTree is an API server whose files subresource of sandbox sbx (stat and list) serves a tree the test
// changes; it counts the lists.
type fakeTree struct {
	mu    sync.Mutex
	files map[string]fileInfo // by absolute path; directories too
	lists int
}

func newFakeTree(t *testing.T) (*fakeTree, *httptest.Server) {
	t.Helper()
	f := &fakeTree{files: map[string]fileInfo{"/w": {Name: "w", Type: "dir", Mode: "755"}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews" {
			_, _ = io.WriteString(w, `{"status":{"userInfo":{"username":"system:serviceaccount:ns-a:agent"}}}`)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/apis/subresources.dockside.dev/v1alpha1/namespaces/ns-a/sandboxes/") || !strings.HasSuffix(r.URL.Path, "/files") {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		p := r.URL.Query().Get("path")
		info, ok := f.files[p]
		if !ok || !strings.Contains(r.URL.Path, "/sbx/") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprintf(w, `{"kind":"Status","code":404,"message":"%s: no such file or directory"}`, p)
			return
		}
		if r.URL.Query().Get("op") == "stat" {
			_ = json.NewEncoder(w).Encode(info)
			return
		}
		f.lists++
		items := []fileInfo{}
		for name, it := range f.files {
			if path.Dir(name) == p && name != p {
				items = append(items, it)
			}
		}
		_ = json.NewEncoder(w).Encode(items)
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

var epoch = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// put makes or changes a file (or with size -1 a directory) at p.
func (f *fakeTree) put(p string, size int64, mode string, at int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info := fileInfo{Name: path.Base(p), Type: "file", Size: size, Mode: mode, Mtime: epoch.Add(time.Duration(at) * time.Second)}
	if size < 0 {
		info.Type, info.Size = "dir", 4096
	}
	f.files[p] = info
}

func (f *fakeTree) move(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	info := f.files[from]
	delete(f.files, from)
	info.Name = path.Base(to)
	f.files[to] = info
}

func (f *fakeTree) remove(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.files {
		if name == p || strings.HasPrefix(name, p+"/") {
			delete(f.files, name)
		}
	}
}

func ev(name string, typ filesystem.EventType) *filesystem.FilesystemEvent {
	return &filesystem.FilesystemEvent{Name: name, Type: typ}
}

const (
	evCreate = filesystem.EventType_EVENT_TYPE_CREATE
	evWrite  = filesystem.EventType_EVENT_TYPE_WRITE
	evRemove = filesystem.EventType_EVENT_TYPE_REMOVE
	evRename = filesystem.EventType_EVENT_TYPE_RENAME
	evChmod  = filesystem.EventType_EVENT_TYPE_CHMOD
)

func eventsEqual(want ...*filesystem.FilesystemEvent) OmegaMatcher {
	items := make([]any, len(want))
	for i, w := range want {
		items[i] = And(HaveField("Name", w.Name), HaveField("Type", w.Type))
	}
	if len(items) == 0 {
		return BeEmpty()
	}
	return HaveExactElements(items...)
}

func TestChangesAreEnvdsEvents(t *testing.T) {
	g := NewWithT(t)
	at := func(s int) time.Time { return epoch.Add(time.Duration(s) * time.Second) }
	before := snapshot{
		"kept":     {typ: "file", size: 1, mtime: at(1), mode: "644"},
		"written":  {typ: "file", size: 1, mtime: at(1), mode: "644"},
		"chmodded": {typ: "file", size: 1, mtime: at(1), mode: "644"},
		"gone":     {typ: "file", size: 1, mtime: at(1), mode: "644"},
		"old":      {typ: "file", size: 7, mtime: at(2), mode: "644"},
		"d":        {typ: "dir", size: 4096, mtime: at(1), mode: "755"},
	}
	after := snapshot{
		"kept":     before["kept"],
		"written":  {typ: "file", size: 2, mtime: at(3), mode: "644"},
		"chmodded": {typ: "file", size: 1, mtime: at(1), mode: "600"},
		"new":      {typ: "file", size: 7, mtime: at(2), mode: "644"}, // old, moved
		"touched":  {typ: "file", size: 0, mtime: at(3), mode: "644"},
		"made":     {typ: "file", size: 5, mtime: at(3), mode: "644"},
		"d":        {typ: "dir", size: 4096, mtime: at(3), mode: "755"}, // its entries changed
		"d/x":      {typ: "file", size: 0, mtime: at(3), mode: "644"},
	}
	g.Expect(changes(before, after)).To(eventsEqual(
		ev("chmodded", evChmod), ev("d/x", evCreate), ev("gone", evRemove), ev("made", evCreate), ev("made", evWrite),
		ev("new", evCreate), ev("old", evRename), ev("touched", evCreate), ev("written", evWrite)))
	g.Expect(changes(after, after)).To(BeEmpty())
}

func watchRequest[T any](msg *T, sandbox string) *connect.Request[T] {
	req := connect.NewRequest(msg)
	req.Header().Set("E2b-Sandbox-Id", sandbox)
	req.Header().Set("X-Access-Token", "key-a")
	return req
}

// WatchDir as the async SDK reads it: a start event, then each change within a poll, names relative to the
// watched directory and, with recursive, in its subdirectories; the stream ends when the directory goes.
func TestWatchDirStreamsChangesUntilTheDirectoryGoes(t *testing.T) {
	g := NewWithT(t)
	f, api := newFakeTree(t)
	f.put("/w/sub", -1, "755", 0)
	gw := newTestGateway(t, api.URL)
	limits := defaultWatchLimits
	limits.poll = 20 * time.Millisecond
	gw.watchers = newWatchers(limits)
	srv := httptest.NewServer(gw)
	defer srv.Close()
	cl := filesystemconnect.NewFilesystemClient(http.DefaultClient, srv.URL, connect.WithProtoJSON())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	missing, err := cl.WatchDir(ctx, watchRequest(&filesystem.WatchDirRequest{Path: "/nope"}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(missing.Receive()).To(BeFalse())
	g.Expect(connect.CodeOf(missing.Err())).To(Equal(connect.CodeNotFound), "a missing directory: the SDK's FileNotFoundException")
	stream, err := cl.WatchDir(ctx, watchRequest(&filesystem.WatchDirRequest{Path: "/w", Recursive: true}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	got := make(chan *filesystem.WatchDirResponse, 64)
	go func() {
		defer close(got)
		for stream.Receive() {
			got <- stream.Msg()
		}
	}()
	g.Eventually(got, 10*time.Second).Should(Receive(HaveField("Event", HaveField("Start", Not(BeNil())))))
	next := func() *filesystem.FilesystemEvent {
		var r *filesystem.WatchDirResponse
		g.Eventually(got, 10*time.Second).Should(Receive(&r))
		return r.GetFilesystem()
	}
	f.put("/w/a.txt", 3, "644", 1)
	g.Expect([]*filesystem.FilesystemEvent{next(), next()}).To(eventsEqual(ev("a.txt", evCreate), ev("a.txt", evWrite)))
	f.put("/w/sub/b", 0, "644", 1)
	g.Expect(next()).To(And(HaveField("Name", "sub/b"), HaveField("Type", evCreate)), "recursive: a subdirectory's entry, named from the watched one")
	f.move("/w/a.txt", "/w/c.txt")
	g.Expect([]*filesystem.FilesystemEvent{next(), next()}).To(eventsEqual(ev("a.txt", evRename), ev("c.txt", evCreate)))
	f.remove("/w")
	g.Eventually(got, 10*time.Second).Should(BeClosed())
	g.Expect(connect.CodeOf(stream.Err())).To(Equal(connect.CodeNotFound))
	g.Expect(gw.watchers.count).To(BeEmpty(), "the stream's watcher is counted no more")
}

// The polled watchers of the sync SDK: CreateWatcher, GetWatcherEvents (what changed since the last read),
// RemoveWatcher; bounded per sandbox and in entries; only the same caller and Sandbox read one.
func TestPolledWatchers(t *testing.T) {
	g := NewWithT(t)
	f, api := newFakeTree(t)
	gw := newTestGateway(t, api.URL)
	limits := defaultWatchLimits
	limits.entries, limits.perSandbox = 5, 2
	gw.watchers = newWatchers(limits)
	srv := httptest.NewServer(gw)
	defer srv.Close()
	cl := filesystemconnect.NewFilesystemClient(http.DefaultClient, srv.URL, connect.WithProtoJSON())
	ctx := context.Background()

	_, err := cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w/none"}, "sbx"))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound))
	f.put("/w/file", 1, "644", 0)
	_, err = cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w/file"}, "sbx"))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeInvalidArgument), "a file is not watched")

	created, err := cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w"}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	id := created.Msg.GetWatcherId()
	g.Expect(id).To(HaveLen(32))
	read := func() ([]*filesystem.FilesystemEvent, error) {
		r, err := cl.GetWatcherEvents(ctx, watchRequest(&filesystem.GetWatcherEventsRequest{WatcherId: id}, "sbx"))
		if err != nil {
			return nil, err
		}
		return r.Msg.GetEvents(), nil
	}
	g.Expect(read()).To(BeEmpty())
	f.put("/w/file", 2, "600", 1)
	f.put("/w/sub", -1, "755", 1)
	f.put("/w/sub/deep", 1, "644", 1)
	g.Expect(read()).To(eventsEqual(ev("file", evWrite), ev("file", evChmod), ev("sub", evCreate)), "not recursive: sub's entries are not watched")
	g.Expect(read()).To(BeEmpty(), "what was read is not read again")

	_, err = cl.GetWatcherEvents(ctx, watchRequest(&filesystem.GetWatcherEventsRequest{WatcherId: id}, "other"))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound), "another sandbox's watcher is not found")

	second, err := cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w", Recursive: true}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w"}, "sbx"))
	g.Expect(err).To(MatchError(ContainSubstring("has 2 watchers already")))
	_, err = cl.RemoveWatcher(ctx, watchRequest(&filesystem.RemoveWatcherRequest{WatcherId: second.Msg.GetWatcherId()}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())

	for i := range 4 {
		f.put(fmt.Sprintf("/w/sub/n%d", i), 0, "644", 2)
	}
	_, err = cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w", Recursive: true}, "sbx"))
	g.Expect(err).To(MatchError(ContainSubstring("more than 5 entries")), "a recursive look counts sub's entries")
	g.Expect(gw.watchers.count).To(HaveKeyWithValue("ns-a/sbx", 1), "the refused watchers are not kept")

	f.remove("/w")
	_, err = read()
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound))
	g.Expect(gw.watchers.polled).To(BeEmpty(), "a watcher whose directory went is removed")
	_, err = cl.RemoveWatcher(ctx, watchRequest(&filesystem.RemoveWatcherRequest{WatcherId: id}, "sbx"))
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound))
}

// Watchers unread for limits.idle go, and so do those of a killed sandbox.
func TestPolledWatchersAreSwept(t *testing.T) {
	g := NewWithT(t)
	w := newWatchers(watchLimits{perSandbox: 2, total: 3, idle: time.Minute})
	idle, err := w.add(&polledWatcher{sandbox: "ns/a", user: "u"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = w.add(&polledWatcher{sandbox: "ns/b", user: "u"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = w.add(&polledWatcher{sandbox: "ns/b", user: "u"})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = w.add(&polledWatcher{sandbox: "ns/c", user: "u"})
	g.Expect(err).To(MatchError(ContainSubstring("keeps 3 watchers already")))
	w.polled[idle].used = time.Now().Add(-2 * time.Minute)
	_, err = w.add(&polledWatcher{sandbox: "ns/c", user: "u"})
	g.Expect(err).NotTo(HaveOccurred(), "the idle one made room")
	_, err = w.get(idle, "ns/a", "u")
	g.Expect(connect.CodeOf(err)).To(Equal(connect.CodeNotFound))
	w.dropSandbox("ns/b")
	g.Expect(w.count).To(Equal(map[string]int{"ns/c": 1}))
	g.Expect(w.polled).To(HaveLen(1))
}

// include_entry: each event whose entry is still there carries its EntryInfo as the look saw it, under the
// watched directory; REMOVE and RENAME (the old name) carry none, as envd's cannot stat them.
func TestEventsCarryTheirEntryWhenAsked(t *testing.T) {
	g := NewWithT(t)
	at := epoch.Add(3 * time.Second)
	before := snapshot{"old": {typ: "file", size: 7, mtime: epoch, mode: "644"}, "gone": {typ: "file", size: 1, mtime: epoch, mode: "644"}}
	after := snapshot{
		"new":  before["old"],
		"made": {typ: "file", size: 5, mtime: at, mode: "640"},
		"d":    {typ: "dir", size: 4096, mtime: at, mode: "755"},
		"ln":   {typ: "symlink", size: 4, mtime: at, mode: "777", link: "made"},
	}
	evs := withEntries(changes(before, after), after, "/w")
	entries := map[string]*filesystem.EntryInfo{}
	for _, e := range evs {
		switch e.GetType() {
		case evRemove, evRename:
			g.Expect(e.Entry).To(BeNil(), "%s %s: its name is gone", e.GetType(), e.GetName())
		default:
			g.Expect(e.Entry).NotTo(BeNil(), "%s %s", e.GetType(), e.GetName())
			entries[e.GetName()] = e.GetEntry()
		}
	}
	g.Expect(entries).To(HaveLen(4))
	g.Expect(entries["made"]).To(And(HaveField("Name", "made"), HaveField("Path", "/w/made"), HaveField("Size", int64(5)),
		HaveField("Type", filesystem.FileType_FILE_TYPE_FILE), HaveField("Mode", uint32(0o640)), HaveField("Permissions", "-rw-r-----")))
	g.Expect(entries["made"].GetModifiedTime().AsTime()).To(BeTemporally("==", at))
	g.Expect(entries["new"].GetPath()).To(Equal("/w/new"), "a rename's new name has its entry")
	g.Expect(entries["d"].GetType()).To(Equal(filesystem.FileType_FILE_TYPE_DIRECTORY))
	g.Expect(entries["ln"].GetSymlinkTarget()).To(Equal("made"))
	g.Expect(changes(before, after)).To(HaveEach(HaveField("Entry", BeNil())), "without include_entry, none")
}

// include_entry reaches both kinds of watchers, and in the JSON the SDK reads, entry is an EntryInfo object.
func TestWatchersSendEntriesWhenAsked(t *testing.T) {
	g := NewWithT(t)
	f, api := newFakeTree(t)
	f.put("/w", -1, "755", 0)
	gw := newTestGateway(t, api.URL)
	limits := defaultWatchLimits
	limits.poll = 20 * time.Millisecond
	gw.watchers = newWatchers(limits)
	srv := httptest.NewServer(gw)
	defer srv.Close()
	cl := filesystemconnect.NewFilesystemClient(http.DefaultClient, srv.URL, connect.WithProtoJSON())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	created, err := cl.CreateWatcher(ctx, watchRequest(&filesystem.CreateWatcherRequest{Path: "/w", IncludeEntry: true}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	stream, err := cl.WatchDir(ctx, watchRequest(&filesystem.WatchDirRequest{Path: "/w", IncludeEntry: true}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stream.Receive()).To(BeTrue()) // the start event
	f.put("/w/a.txt", 3, "644", 1)
	g.Expect(stream.Receive()).To(BeTrue())
	g.Expect(stream.Msg().GetFilesystem()).To(And(HaveField("Name", "a.txt"), HaveField("Type", evCreate)))
	g.Expect(stream.Msg().GetFilesystem().GetEntry()).To(And(HaveField("Path", "/w/a.txt"), HaveField("Size", int64(3))))

	r, err := cl.GetWatcherEvents(ctx, watchRequest(&filesystem.GetWatcherEventsRequest{WatcherId: created.Msg.GetWatcherId()}, "sbx"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Msg.GetEvents()).To(HaveEach(HaveField("Entry", HaveField("Path", "/w/a.txt"))))
	g.Expect(r.Msg.GetEvents()).To(HaveLen(2)) // CREATE and WRITE

	body := `{"watcherId":"` + created.Msg.GetWatcherId() + `"}`
	f.put("/w/b", 0, "600", 2)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/filesystem.Filesystem/GetWatcherEvents", strings.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("E2b-Sandbox-Id", "sbx")
	req.Header.Set("X-Access-Token", "key-a")
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var got struct {
		Events []struct {
			Name  string         `json:"name"`
			Entry map[string]any `json:"entry"`
		} `json:"events"`
	}
	g.Expect(json.NewDecoder(resp.Body).Decode(&got)).To(Succeed())
	g.Expect(got.Events).To(HaveLen(1))
	g.Expect(got.Events[0].Entry).To(And(HaveKeyWithValue("name", "b"), HaveKeyWithValue("type", "FILE_TYPE_FILE"),
		HaveKeyWithValue("path", "/w/b"), HaveKeyWithValue("permissions", "-rw-------")))
}
