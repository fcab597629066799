package imagepuller

import (
	"context"
	"fmt"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// TooLargeError is a pull refused for the size of its image (docs/images.md, "How large an image may be").
// A pull is stopped as soon as the compressed sizes of the layers the registry announced add up to more than
// the node's cap (Packed: the image unpacked is larger still), or as soon as what it has unpacked so far does
// (Unpacking: the file system Docker unpacks into grew by more than the cap and the compressed layers it may
// hold meanwhile); an image whose unpacked size passes the cap once pulled is removed again, unless a
// container was made from it meanwhile. Retrying cannot help: the same image is as large next time.
type TooLargeError struct {
	Ref       string
	Bytes     int64 // what the image was found to take: compressed layers announced (Packed), or unpacked
	Max       int64 // the node's cap on one image
	Packed    bool
	Unpacking bool
	Removed   bool // the pulled image was removed again
}

func (e *TooLargeError) Error() string {
	what := "takes"
	switch {
	case e.Packed:
		what = "has compressed layers of"
	case e.Unpacking:
		what = "had unpacked more than"
	}
	return fmt.Sprintf("image %s %s %d bytes, more than the %d bytes this node allows for one image", e.Ref, what, e.Bytes, e.Max)
}

// Usage reports the size and the free bytes of the file system Docker unpacks images into (imagegc.Statfs).
type Usage func() (size, free uint64, err error)

// diskPoll is how often a pull looks at the disk between the daemon's progress messages.
const diskPoll = 250 * time.Millisecond

// WatchDisk has every pull stop as soon as what it unpacked passes the cap, as measured on the file system
// usage reports, rather than only once it ended. It returns p.
func (p *Puller) WatchDisk(usage Usage) *Puller {
	p.usage = usage
	return p
}

// used is how many bytes the watched file system holds; false when it is not watched or cannot be read.
func (p *Puller) used() (int64, bool) {
	if p.usage == nil || p.maxBytes <= 0 {
		return 0, false
	}
	size, free, err := p.usage()
	if err != nil || size < free {
		return 0, false
	}
	return int64(size - free), true //nolint:gosec // a file system's size
}

// watchUnpacking looks at the disk every diskPoll until done is closed, stopping pl when it unpacked too much.
func (p *Puller) watchUnpacking(pl *pull, done <-chan struct{}) {
	tick := time.NewTicker(diskPoll)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			p.mu.Lock()
			p.tooLargeUnpacking(pl)
			p.mu.Unlock()
		}
	}
}

// tooLargeMidPull stops a pull whose announced layers pass the cap, or that unpacked more than it; the caller
// holds p.mu.
func (p *Puller) tooLargeMidPull(pl *pull, pr dd.PullProgress) {
	if p.maxBytes > 0 && pl.tooLarge == 0 && pr.BytesTotal > p.maxBytes {
		pl.tooLarge = pr.BytesTotal
		pl.cancel()
		return
	}
	p.tooLargeUnpacking(pl)
}

// tooLargeUnpacking stops pl once the disk grew, since it started, by more than the cap and the compressed
// layers it announced (which the daemon keeps on the same disk until each is unpacked). The disk does not
// tell pulls apart: with others running meanwhile each may take the cap, so the growth is weighed against the
// cap times the most pulls that ran at once, and a pull stopped among others (shared) is tried again as any
// failed pull is. The caller holds p.mu.
func (p *Puller) tooLargeUnpacking(pl *pull) {
	if pl.tooLarge != 0 || !pl.ended.IsZero() || !pl.watched {
		return
	}
	now, ok := p.used()
	if !ok {
		return
	}
	unpacked := now - pl.diskAtStart - pl.progress.BytesTotal
	if unpacked > p.maxBytes*int64(pl.together) {
		pl.tooLarge, pl.unpacking = unpacked, true
		pl.cancel()
	}
}

// tooLargeError is the error of a pull stopped for its size, nil for one that was not. A pull stopped for
// what the disk took while other pulls ran is not known to be the one too large: it fails as Uncertain.
func (p *Puller) tooLargeError(pl *pull) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case pl.tooLarge == 0:
		return nil
	case pl.unpacking && pl.together > 1:
		return dd.NewError(dd.KindUncertain, dd.PhaseImage, pl.ref, fmt.Sprintf(
			"the pull was stopped: the node's disk grew by %d bytes while %d pulls ran, more than %d bytes each allows", pl.tooLarge, pl.together, p.maxBytes))
	}
	return &TooLargeError{Ref: pl.ref, Bytes: pl.tooLarge, Max: p.maxBytes, Packed: !pl.unpacking, Unpacking: pl.unpacking}
}

// checkPulledSize refuses an image that passed the cap once unpacked, removing it: it was pulled for a start
// that cannot use it. A container made from it meanwhile keeps it (Docker refuses the removal).
func (p *Puller) checkPulledSize(ctx context.Context, ref string, img dd.ImageInfo) error {
	if p.maxBytes <= 0 || img.Size <= p.maxBytes {
		return nil
	}
	err := &TooLargeError{Ref: ref, Bytes: img.Size, Max: p.maxBytes}
	if rmErr := p.driver.RemoveImage(ctx, ref); rmErr == nil {
		err.Removed = true
	}
	return err
}
