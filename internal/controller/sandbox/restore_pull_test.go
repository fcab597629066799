package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/checkpointregistry"
	"github.com/dockside-dev/dockside/internal/testutil/memregistry"
	"github.com/dockside-dev/dockside/internal/testutil/tarball"
)

const storeLimit = 1 << 20

// captured stores a small tar archive in a node's store under the Checkpoint uid and returns it with its bytes.
func captured(t *testing.T, store *archive.Store, uid string) (archive.Archive, []byte) {
	t.Helper()
	data, err := io.ReadAll(tarball.Of(t, map[string]string{"notes.txt": "files of the workspace\n"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Create(int64(len(data)), "ns")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	a, err := store.Commit(c, uid)
	if err != nil {
		t.Fatal(err)
	}
	return a, data
}

func openStore(t *testing.T) *archive.Store {
	t.Helper()
	s, err := archive.Open(t.TempDir(), archive.Limits{Store: storeLimit})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An archive captured on node a and pushed restores on node b, which pulls it by digest, byte for byte,
// and keeps nothing of it once the restore is done.
func TestARestoreOnAnotherNodePullsTheArchiveFromTheRegistry(t *testing.T) {
	ctx := context.Background()
	srv, err := memregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	reg, err := checkpointregistry.New(srv.Repo(), checkpointregistry.Options{PlainHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	nodeA, nodeB := openStore(t), openStore(t)
	a, want := captured(t, nodeA, "uid-1")
	if err := reg.Push(ctx, "uid-1", a, func() (io.ReadCloser, error) { return nodeA.Open(a) }); err != nil {
		t.Fatal(err)
	}

	res := restoreResult{checkpoint: "ckpt", uid: "uid-1", namespace: "ns", archive: a}
	alone := &Reconciler{Archives: nodeB, Options: Options{Node: "b"}}
	if _, _, err := alone.openArchive(ctx, res); !errors.Is(err, archive.ErrMissing) {
		t.Fatalf("without a registry: %v, want ErrMissing", err)
	}

	r := &Reconciler{Archives: nodeB, Registry: reg, Options: Options{Node: "b"}}
	rd, done, err := r.openArchive(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rd)
	done()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (%v), want the %d captured", len(got), err, len(want))
	}
	if err := nodeB.Check(a); !errors.Is(err, archive.ErrMissing) {
		t.Fatalf("node b kept the pulled archive: Check = %v", err)
	}
	c, err := nodeB.Create(storeLimit, "ns")
	if err != nil {
		t.Fatalf("the pull's room was not given back: %v", err)
	}
	nodeB.Discard(c)

	other := res
	other.uid = "uid-never-pushed"
	if _, _, err := r.openArchive(ctx, other); !errors.Is(err, archive.ErrMissing) {
		t.Fatalf("a Checkpoint never pushed: %v, want ErrMissing", err)
	}
}
