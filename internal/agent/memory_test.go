package agent

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestAllocatableMemory(t *testing.T) {
	const gi = int64(1 << 30)
	for name, c := range map[string]struct {
		host, configured int64
		want             int64 // 0: refused
	}{
		"configured, whatever the host":     {host: 4 * gi, configured: 20 * gi, want: 20 * gi},
		"a tenth kept on a large host":      {host: 24 * gi, want: 24*gi - 24*gi/10},
		"at least 1Gi kept on a small host": {host: 4 * gi, want: 3 * gi},
		"a host with no more than the rest": {host: gi, want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			d := fake.New("node-a")
			d.SetHostMemory(c.host)
			got, err := allocatableMemory(context.Background(), d, time.Second, c.configured, logr.Discard())
			switch {
			case c.want == 0 && err == nil:
				t.Fatalf("allocatable %d, want a refusal", got)
			case c.want != 0 && (err != nil || got != c.want):
				t.Fatalf("allocatable %d, %v; want %d", got, err, c.want)
			}
		})
	}
}

func TestAllocatableMemoryRefusesNegative(t *testing.T) {
	o := Options{Node: "node-a", Driver: fake.New("node-a"), AllocatableMemory: -1}
	if err := o.defaults(); err == nil {
		t.Fatal("a negative allocatable memory was accepted")
	}
}
