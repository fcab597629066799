// Package imagegc removes images no container uses when the disk they live on fills, as kubelet's image
// garbage collection does (docs/images.md, "Garbage collection of images").
package imagegc

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Defaults, kubelet's.
const (
	DefaultHighPercent = 85
	DefaultLowPercent  = 80
	DefaultMinAge      = 2 * time.Minute
	DefaultPeriod      = 5 * time.Minute
)

// Options of a collector. Images are removed once the disk they live on is more than HighPercent full,
// least recently used first, until it would be LowPercent full; never an image a container (of any node, in
// any state) was made from, one of Keep, or one used or first seen less than MinAge ago.
type Options struct {
	HighPercent int // 100 turns collection off
	LowPercent  int
	MinAge      time.Duration
	Period      time.Duration
	Keep        []string          // image names never removed: the holder image
	Match       map[string]string // only images with these labels (nil: every image of the daemon)
}

// Disk reports the size and the free bytes of the file system images live on.
type Disk func() (size, free uint64, err error)

// Statfs is the Disk of the file system that holds path.
func Statfs(path string) Disk {
	return func() (uint64, uint64, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err != nil {
			return 0, 0, fmt.Errorf("reading the size of the file system of %s: %w", path, err)
		}
		return st.Blocks * uint64(st.Bsize), st.Bavail * uint64(st.Bsize), nil //nolint:gosec // sizes are positive
	}
}

// Collector is one node's image garbage collector, a manager.Runnable.
type Collector struct {
	Driver  dd.Driver
	Disk    Disk
	Options Options
	Log     logr.Logger
	Now     func() time.Time // nil: time.Now

	lastUsed map[string]time.Time // by image ID: when a container last used it, or when it was first seen
}

// Start collects every Period until ctx ends. A failed round is logged and tried again the next period.
func (c *Collector) Start(ctx context.Context) error {
	if c.Options.HighPercent >= 100 {
		return nil
	}
	tick := time.NewTicker(c.Options.Period)
	defer tick.Stop()
	for {
		if _, err := c.Collect(ctx); err != nil {
			c.Log.Error(err, "Image garbage collection failed; trying again next period")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Collect runs one round and returns the names (or IDs) of the images it removed.
func (c *Collector) Collect(ctx context.Context) ([]string, error) {
	now := time.Now()
	if c.Now != nil {
		now = c.Now()
	}
	images, err := c.Driver.ListImages(ctx, c.Options.Match)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	c.note(images, now)
	size, free, err := c.Disk()
	if err != nil || size == 0 {
		return nil, err
	}
	used := size - free
	if used*100 < uint64(c.Options.HighPercent)*size { //nolint:gosec // a percentage
		return nil, nil
	}
	toFree := int64(used - uint64(c.Options.LowPercent)*size/100) //nolint:gosec // a percentage
	var removed []string
	for _, img := range c.candidates(images, now) {
		if toFree <= 0 {
			break
		}
		names := img.Refs
		if len(names) == 0 {
			names = []string{img.ID}
		}
		for _, name := range names {
			if err := c.Driver.RemoveImage(ctx, name); err != nil {
				// A container made from it since the list: it is in use now, and stays.
				c.Log.Info("Image not removed", "image", name, "why", err.Error())
				break
			}
			removed = append(removed, name)
		}
		toFree -= img.Size
		delete(c.lastUsed, img.ID)
	}
	if len(removed) > 0 {
		c.Log.Info("Removed unused images: the disk was full past the threshold", "images", removed,
			"usedPercent", used*100/size, "highPercent", c.Options.HighPercent, "lowPercent", c.Options.LowPercent)
	}
	return removed, nil
}

// note records when each image was last in use, or first seen; images gone are forgotten.
func (c *Collector) note(images []dd.ImageSummary, now time.Time) {
	if c.lastUsed == nil {
		c.lastUsed = map[string]time.Time{}
	}
	seen := map[string]bool{}
	for _, img := range images {
		seen[img.ID] = true
		if _, known := c.lastUsed[img.ID]; img.InUse || !known {
			c.lastUsed[img.ID] = now
		}
	}
	for id := range c.lastUsed {
		if !seen[id] {
			delete(c.lastUsed, id)
		}
	}
}

// candidates are the images that may go, least recently used first.
func (c *Collector) candidates(images []dd.ImageSummary, now time.Time) []dd.ImageSummary {
	var out []dd.ImageSummary
	for _, img := range images {
		kept := slices.ContainsFunc(img.Refs, func(ref string) bool { return slices.Contains(c.Options.Keep, ref) })
		if img.InUse || kept || now.Sub(c.lastUsed[img.ID]) < c.Options.MinAge {
			continue
		}
		out = append(out, img)
	}
	sort.SliceStable(out, func(i, j int) bool { return c.lastUsed[out[i].ID].Before(c.lastUsed[out[j].ID]) })
	return out
}
