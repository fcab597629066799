package dockerdriver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
)

// PullImage has the daemon pull ref from its registry with auth (nil: anonymously), reporting progress
// (which may be nil) as the daemon streams it. It blocks until the pull ends or ctx does; a pull cut short
// is Uncertain (layers already fetched stay on the node). Failures name what went wrong in the driver's own
// words: registries' and the daemon's messages can echo credentials and are never passed on.
func (d *Docker) PullImage(ctx context.Context, ref string, auth *RegistryAuth, progress func(PullProgress)) (PullResult, error) {
	opts := image.PullOptions{}
	if auth != nil {
		encoded, err := registry.EncodeAuthConfig(registry.AuthConfig{
			ServerAddress: auth.ServerAddress, Username: auth.Username, Password: auth.Password, IdentityToken: auth.IdentityToken,
		})
		if err != nil {
			return PullResult{}, NewError(KindInvalidSpec, PhaseImage, ref, "the registry credentials could not be encoded")
		}
		opts.RegistryAuth = encoded
	}
	body, err := d.cli.ImagePull(ctx, ref, opts)
	if err != nil {
		return PullResult{}, d.pullError(ctx, ref, err)
	}
	defer body.Close()
	return d.followPull(ctx, ref, body, progress)
}

// pullMessage is one message of the daemon's pull stream (its JSONMessage, as far as a pull uses it).
type pullMessage struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress *struct {
		Current int64 `json:"current"`
		Total   int64 `json:"total"`
	} `json:"progressDetail"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// followPull reads the daemon's progress stream to its end: layer progress, the digest it reports, or the
// error that ended the pull.
func (d *Docker) followPull(ctx context.Context, ref string, body io.Reader, progress func(PullProgress)) (PullResult, error) {
	var res PullResult
	layers := pullLayers{}
	dec := json.NewDecoder(body)
	for {
		var msg pullMessage
		err := dec.Decode(&msg)
		switch {
		case errors.Is(err, io.EOF):
			return res, nil
		case err != nil:
			return PullResult{}, d.pullError(ctx, ref, err)
		case msg.ErrorDetail != nil:
			return PullResult{}, pullFailure(ref, msg.ErrorDetail.Message)
		case msg.Error != "":
			return PullResult{}, pullFailure(ref, msg.Error)
		}
		if digest, ok := strings.CutPrefix(msg.Status, "Digest: "); ok {
			res.Digest = strings.TrimSpace(digest)
		}
		if layers.update(msg) && progress != nil {
			progress(layers.progress())
		}
	}
}

// pullError classifies an error of the pull request or of reading its stream.
func (d *Docker) pullError(ctx context.Context, ref string, err error) error {
	switch {
	case isUnreachable(err):
		return d.unreachable(PhaseImage, ref)
	case ctx.Err() != nil:
		return NewError(KindUncertain, PhaseImage, ref, "the pull did not finish before its deadline")
	case cerrdefs.IsNotFound(err):
		return NewError(KindNotFound, PhaseImage, ref, pullNotFound)
	case cerrdefs.IsUnauthorized(err), cerrdefs.IsPermissionDenied(err):
		return NewError(KindConflict, PhaseImage, ref, pullUnauthorized)
	}
	return pullFailure(ref, err.Error())
}

const (
	pullNotFound     = "the registry has no such image, or it needs credentials"
	pullUnauthorized = "the registry refused the credentials"
)

// pullFailures tell registry failures apart by the signs in the daemon's text, which is read here only to
// classify it. The first entry with a matching sign wins.
var pullFailures = []struct {
	kind   Kind
	reason string
	signs  []string
}{
	{KindInvalidSpec, "the image reference is not valid", []string{"invalid reference format"}},
	{KindNotFound, pullNotFound, []string{"manifest unknown", "not found", "does not exist"}},
	{KindConflict, pullUnauthorized, []string{"unauthorized", "denied", "authentication required", "no basic auth credentials"}},
	{KindUncertain, "the registry limits pulls for now", []string{"toomanyrequests", "too many requests"}},
	{KindUncertain, "the registry could not be reached", []string{
		"connection refused", "no such host", "i/o timeout", "dial tcp", "network is unreachable",
		"tls handshake", "server gave http response to https client", "connection reset",
	}},
}

// pullFailure turns the daemon's text about a failed pull into the driver's words.
func pullFailure(ref, text string) error {
	text = strings.ToLower(text)
	for _, f := range pullFailures {
		for _, sign := range f.signs {
			if strings.Contains(text, sign) {
				return NewError(f.kind, PhaseImage, ref, f.reason)
			}
		}
	}
	return NewError(KindUncertain, PhaseImage, ref, "the pull failed")
}

// pullLayers adds up the per-layer progress messages of a pull.
type pullLayers map[string]*pullLayer

type pullLayer struct {
	done           bool
	current, total int64
}

// update takes one message and tells whether it was about a layer.
func (p pullLayers) update(msg pullMessage) bool {
	switch msg.Status {
	case "Pulling fs layer", "Waiting", "Downloading", "Verifying Checksum", "Download complete", "Extracting",
		"Pull complete", "Already exists":
	default:
		return false
	}
	l := p[msg.ID]
	if l == nil {
		l = &pullLayer{}
		p[msg.ID] = l
	}
	switch msg.Status {
	case "Downloading":
		if msg.Progress != nil {
			l.current, l.total = msg.Progress.Current, max(msg.Progress.Total, msg.Progress.Current)
		}
	case "Verifying Checksum", "Download complete", "Extracting":
		l.current = l.total
	case "Pull complete", "Already exists":
		l.done, l.current = true, l.total
	}
	return true
}

func (p pullLayers) progress() PullProgress {
	out := PullProgress{Layers: len(p)}
	for _, l := range p {
		if l.done {
			out.LayersDone++
		}
		out.BytesDone += l.current
		out.BytesTotal += l.total
	}
	return out
}
