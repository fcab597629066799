package imagegc

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

const (
	holder = "dockside.dev/holder:local"
	gib    = 1 << 30
)

// disk is a file system of 100 GiB with used GiB taken, which removals give back.
type disk struct{ used int64 }

func (d *disk) read() (uint64, uint64, error) { return 100 * gib, uint64(100*gib - d.used), nil }

// node is a fake daemon with images of the given GiB, a collector over it and a clock it runs on.
func node(t *testing.T, sizes map[string]int64) (*Collector, *fake.Driver, *disk, *time.Time) {
	docker := fake.New("node-a")
	for ref, size := range sizes {
		docker.AddImage(ref, dd.ImageInfo{Size: size * gib})
	}
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	d := &disk{}
	c := &Collector{
		Driver: gcDriver{docker, d}, Disk: d.read, Log: logr.Discard(), Now: func() time.Time { return now },
		Options: Options{HighPercent: 85, LowPercent: 80, MinAge: DefaultMinAge, Keep: []string{holder}},
	}
	return c, docker, d, &now
}

// gcDriver gives back an image's size to the disk when it is removed.
type gcDriver struct {
	*fake.Driver
	disk *disk
}

func (g gcDriver) RemoveImage(ctx context.Context, ref string) error {
	info, _ := g.InspectImage(ctx, ref)
	err := g.Driver.RemoveImage(ctx, ref)
	if err == nil {
		g.disk.used -= info.Size
	}
	return err
}

// container is a Sandbox's primary container made from image, never started.
func container(image string) dd.ContainerSpec {
	owner := dd.Owner{Namespace: "ns", Name: "s", UID: "u"}
	return dd.ContainerSpec{Name: dd.Name(owner, "primary", ""), Owner: owner, Role: "primary", Image: image,
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 1e9, PIDs: 64}}
}

func present(docker *fake.Driver, ref string) bool {
	img, _ := docker.InspectImage(context.Background(), ref)
	return img.Exists
}

func TestCollectorRemovesUnusedImagesLeastRecentlyUsedFirstDownToTheLowThreshold(t *testing.T) {
	g := NewWithT(t)
	c, docker, d, now := node(t, map[string]int64{"old:1": 4, "older:1": 3, "busy:1": 20, "new:1": 6, holder: 1})
	d.used = 84 * gib
	_, err := docker.EnsureContainer(context.Background(), container("busy:1"))
	g.Expect(err).NotTo(HaveOccurred())

	removed, err := c.Collect(context.Background()) // first seen now; below the high threshold anyway
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeEmpty())

	*now = now.Add(time.Minute)
	d.used = 90 * gib
	removed, err = c.Collect(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeEmpty(), "no image is older than the minimum age")

	*now = now.Add(2 * time.Minute)
	docker.AddImage("new:1", dd.ImageInfo{Size: 6 * gib}) // the same image, pulled again: still first seen then
	removed, err = c.Collect(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	// 10 GiB to free: two images of the three unused ones suffice (all seen at the same time, so by name order).
	g.Expect(removed).To(HaveLen(2))
	g.Expect(d.used).To(BeNumerically("<=", 80*gib))
	g.Expect(present(docker, "busy:1")).To(BeTrue(), "a container was made from it")
	g.Expect(present(docker, holder)).To(BeTrue(), "the holder image is never removed")

	removed, err = c.Collect(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(BeEmpty(), "below the high threshold again")
}

func TestCollectorRemovesTheLeastRecentlyUsedFirst(t *testing.T) {
	g := NewWithT(t)
	c, docker, d, now := node(t, map[string]int64{"a:1": 5, "b:1": 5})
	_, err := docker.EnsureContainer(context.Background(), container("a:1"))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.Collect(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	*now = now.Add(10 * time.Minute) // a:1 is in use still; b:1 was first seen ten minutes ago
	_, err = c.Collect(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docker.RemoveContainer(context.Background(), container("a:1").Name)).To(Succeed())
	*now = now.Add(3 * time.Minute)
	d.used = 85 * gib
	removed, err := c.Collect(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(Equal([]string{"b:1"}), "enough to go below the low threshold, least recently used first")
	g.Expect(present(docker, "a:1")).To(BeTrue())
}

func TestCollectorAtHundredPercentIsOff(t *testing.T) {
	g := NewWithT(t)
	c, docker, d, _ := node(t, map[string]int64{"a:1": 5})
	c.Options.HighPercent = 100
	d.used = 100 * gib
	g.Expect(c.Start(context.Background())).To(Succeed(), "returns at once")
	g.Expect(docker.Calls(fake.OpListImages)).To(BeZero())
}
