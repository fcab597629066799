package imagepuller

import (
	"context"
	"fmt"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// TooLargeError is a pull refused for the size of its image (docs/images.md, "How large an image may be").
// A pull is stopped as soon as the compressed sizes of the layers the registry announced add up to more than
// the node's cap (Packed: the image unpacked is larger still); an image whose unpacked size passes the cap
// once pulled is removed again, unless a container was made from it meanwhile. Retrying cannot help: the
// same image is as large next time.
type TooLargeError struct {
	Ref     string
	Bytes   int64 // what the image was found to take: compressed layers announced (Packed), or unpacked
	Max     int64 // the node's cap on one image
	Packed  bool
	Removed bool // the pulled image was removed again
}

func (e *TooLargeError) Error() string {
	what := "takes"
	if e.Packed {
		what = "has compressed layers of"
	}
	return fmt.Sprintf("image %s %s %d bytes, more than the %d bytes this node allows for one image", e.Ref, what, e.Bytes, e.Max)
}

// tooLargeMidPull stops a pull whose announced layers pass the cap; the caller holds p.mu.
func (p *Puller) tooLargeMidPull(pl *pull, pr dd.PullProgress) {
	if p.maxBytes > 0 && pl.tooLarge == 0 && pr.BytesTotal > p.maxBytes {
		pl.tooLarge = pr.BytesTotal
		pl.cancel()
	}
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
