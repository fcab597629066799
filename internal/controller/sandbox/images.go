package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/imagepuller"
)

// Events of image pulls.
const (
	EventPulling    = "Pulling"    // a pull this Sandbox waits on started (or it joined one under way)
	EventPulled     = "Pulled"     // that pull ended with the image on the node
	EventPullFailed = "PullFailed" // that pull failed; another follows after a backoff
)

// imageNeed is one image the topology still has to make a container from.
type imageNeed struct {
	what   string // whose image it is, for people: "the primary container", "service db"
	image  string
	policy dsv1alpha1.PullPolicy
	secret *dsv1alpha1.LocalObjectReference
	spec   dd.ContainerSpec // the container it is for, whose mounts must cover its VOLUMEs
}

// ensureImages makes sure, before anything of a new topology is built, that every image it still needs is
// on the node as its pull policy wants, pinned when the node requires it, of the digest it is pinned to,
// and with each VOLUME it declares covered. Pulls run in the background (ImagePuller), all at once; the
// pass waits for them without holding a worker, and is woken as they move on. A refusal the spec must fix
// is Stalled at once; the startup deadline then ends the start (see enforceStartupDeadline).
func (r *Reconciler) ensureImages(ctx context.Context, s *scope) (bool, error) {
	if s.started() {
		return false, nil // its images served their purpose
	}
	var blocked *finding
	for _, n := range r.imageNeeds(s) {
		wait, stop, err := r.ensureImage(ctx, s, n)
		if stop || err != nil {
			return stop, err
		}
		if wait != nil && blocked == nil {
			blocked = wait
		}
	}
	if blocked != nil {
		s.finding = *blocked
		return true, nil
	}
	return false, nil
}

// imageNeeds lists, in start order, the images of the containers of this topology generation not made yet.
func (r *Reconciler) imageNeeds(s *scope) []imageNeed {
	var out []imageNeed
	for _, svc := range s.services {
		if svc == nil || s.containers[s.serviceName(svc.Name)].Exists {
			continue
		}
		out = append(out, imageNeed{what: "service " + svc.Name, image: svc.Spec.Image, policy: svc.Spec.ImagePullPolicy,
			secret: svc.Spec.ImagePullSecret, spec: r.serviceSpec(s, svc)})
	}
	if !s.containers[s.primaryName()].Exists {
		spec := s.sbx.Spec
		out = append(out, imageNeed{what: "the primary container", image: spec.Image, policy: spec.ImagePullPolicy,
			secret: spec.ImagePullSecret, spec: r.primarySpec(s)})
	}
	return out
}

// ensureImage checks one image. It returns what to wait with while a pull is under way or failed,
// or stop when the pass ends on it (Stalled, or an error).
func (r *Reconciler) ensureImage(ctx context.Context, s *scope, n imageNeed) (*finding, bool, error) {
	if r.Options.RequireDigest && !pinned(n.image) {
		s.note(factFailed, dsv1alpha1.ReasonImageNotPinned, "node %s runs only images pinned by digest (name@sha256:<digest>); the image of %s, %s, is not", r.Options.Node, n.what, n.image)
		return nil, true, nil
	}
	img, err := r.Driver.InspectImage(ctx, n.image)
	if err != nil {
		stop, err := s.fail(dsv1alpha1.ReasonImageFailed, "inspecting the image of "+n.what, err)
		return nil, stop, err
	}
	auth, authErr := r.pullAuth(ctx, s.sbx.Namespace, n.secret, n.image)
	if n.policy == dsv1alpha1.PullNever {
		return nil, r.presentOnly(s, n, img, auth, authErr), nil
	}
	req := imagepuller.Request{Ref: n.image, Auth: auth, Waiter: s.key(), Start: s.startID(), Until: s.startupDeadline}
	if st, joined := r.Images.Joined(req); joined {
		return r.followPull(s, n, st), false, nil // the pull's end wakes this start
	}
	st, brought := r.Images.Brought(req)
	// An image present only because other credentials pulled it is used once the registry took these.
	verify := img.Exists && !brought && n.policy != dsv1alpha1.PullAlways && !r.Images.Usable(n.image, img.ID, auth)
	if !img.Exists || (n.policy == dsv1alpha1.PullAlways && !brought) || verify {
		switch {
		case authErr != nil:
			return r.credentialsProblem(s, n, authErr)
		case verify:
			wait, stop := r.verifyCredentials(s, n, req)
			return wait, stop, nil
		}
		return r.followPull(s, n, r.Images.Pull(req)), false, nil
	}
	if brought {
		r.followPull(s, n, st)
		if !digestMatches(n.image, st.Result.Digest, img.RepoDigests) {
			s.note(factFailed, dsv1alpha1.ReasonImageDigestMismatch, "the pull of %s for %s brought content of digest %q, not the digest it is pinned to", n.image, n.what, st.Result.Digest)
			return nil, true, nil
		}
	}
	return nil, r.checkSize(s, n, img) || r.checkVolumes(s, n, img), nil
}

// presentOnly checks an image of pull policy Never: the node must hold it, and the credentials of the
// Sandbox's namespace must have been verified for it if other credentials pulled it, since no pull may
// verify them now. It tells whether the pass stops.
func (r *Reconciler) presentOnly(s *scope, n imageNeed, img dd.ImageInfo, auth *dd.RegistryAuth, authErr error) bool {
	switch {
	case !img.Exists:
		s.note(factFailed, dsv1alpha1.ReasonImageNotPresent, "imagePullPolicy of %s is Never and node %s does not hold its image %s", n.what, r.Options.Node, n.image)
	case !r.Images.Usable(n.image, img.ID, auth):
		s.note(factFailed, dsv1alpha1.ReasonImagePullCredentialsRequired, "%s, and imagePullPolicy Never forbids asking its registry%s",
			notVerified(r.Options.Node, n), secretTrouble(authErr))
	default:
		return r.checkSize(s, n, img) || r.checkVolumes(s, n, img)
	}
	s.after(r.Options.SpecRetry) // it may be loaded, or its credentials verified by another start, before the deadline
	return true
}

// verifyCredentials has the registry check the credentials of the Sandbox's namespace for an image the node
// holds from a pull with other credentials, by pulling it with them: for an image present that fetches its
// manifest and no layer (docs/design/containment.md, "Pull credentials stay in their namespace"). A refusal is
// Stalled until the imagePullSecret changes; other failures are tried again like any pull's. It returns the
// finding to wait with, or stop when the pass ends on a refusal.
func (r *Reconciler) verifyCredentials(s *scope, n imageNeed, req imagepuller.Request) (*finding, bool) {
	if st, refused := r.Images.Refused(req); refused {
		msg := fmt.Sprintf("%s: its registry refused a pull %s (%s)", notVerified(r.Options.Node, n), credentialsOf(n, req.Auth), driverReason(st.Err))
		if st.News {
			r.event(s.sbx, true, EventPullFailed, "Pull", "%s", msg)
		}
		s.note(factFailed, dsv1alpha1.ReasonImagePullCredentialsRequired, "%s", msg)
		s.after(r.Options.SpecRetry) // the Secret is read again: other credentials are another pull
		return nil, true
	}
	st := r.Images.Pull(req)
	wait := r.followPull(s, n, st)
	if st.Pulling {
		wait.message = fmt.Sprintf("verifying with its registry the credentials of this namespace for image %s of %s, which node %s holds from a pull with other credentials",
			n.image, n.what, r.Options.Node)
	}
	return wait, false
}

// notVerified says what keeps an image from a Sandbox whose namespace's credentials were not verified for it.
func notVerified(node string, n imageNeed) string {
	return fmt.Sprintf("image %s of %s is present on node %s but this namespace's credentials were not verified for it", n.image, n.what, node)
}

// credentialsOf says, without a value, which credentials a pull for n used.
func credentialsOf(n imageNeed, auth *dd.RegistryAuth) string {
	switch {
	case n.secret == nil:
		return "without credentials (no imagePullSecret)"
	case auth == nil:
		return fmt.Sprintf("without credentials (imagePullSecret %q has none for %s)", n.secret.Name, imagepuller.Registry(n.image))
	}
	return fmt.Sprintf("with imagePullSecret %q", n.secret.Name)
}

// secretTrouble adds why the imagePullSecret gave no credentials, if it could not be read.
func secretTrouble(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

// credentialsProblem handles an imagePullSecret a pull needs but cannot use. A missing Secret is waited for
// (Secrets are not watched, so it is looked for again later); an unusable one is Stalled until it is fixed
// or the deadline passes.
func (r *Reconciler) credentialsProblem(s *scope, n imageNeed, err error) (*finding, bool, error) {
	var missing *missingPullSecretError
	var invalid *invalidPullSecretError
	switch {
	case errors.As(err, &missing):
		s.after(r.Options.SpecRetry)
		return &finding{fact: factBuilding, reason: dsv1alpha1.ReasonSecretNotFound,
			message: fmt.Sprintf("the image of %s needs %v", n.what, missing)}, false, nil
	case errors.As(err, &invalid):
		s.note(factFailed, dsv1alpha1.ReasonImagePullSecretInvalid, "the image of %s cannot be pulled: %v", n.what, invalid)
		s.after(r.Options.SpecRetry)
		return nil, true, nil
	}
	stop, err := s.fail(dsv1alpha1.ReasonImagePullFailed, "reading the imagePullSecret of "+n.what, err)
	return nil, stop, err
}

// followPull records Events as the pull moves on and returns the finding to wait with until it has ended
// with the image on the node (a pull Pull returns has not: it runs, or failed).
func (r *Reconciler) followPull(s *scope, n imageNeed, st imagepuller.State) *finding {
	switch {
	case st.Pulling:
		if st.News {
			r.event(s.sbx, false, EventPulling, "Pull", "pulling image %s for %s", n.image, n.what)
		}
		return &finding{fact: factBuilding, reason: dsv1alpha1.ReasonImagePulling, message: pullingMessage(n, st)}
	case errors.As(st.Err, new(*imagepuller.TooLargeError)):
		return r.pulledTooLarge(s, n, st)
	case st.Err != nil:
		why := driverReason(st.Err)
		if st.News {
			r.event(s.sbx, true, EventPullFailed, "Pull", "pulling image %s for %s failed: %s; trying again in %s",
				n.image, n.what, why, time.Until(st.RetryAt).Round(time.Second))
		}
		s.after(time.Until(st.RetryAt))
		return &finding{fact: factBuilding, reason: dsv1alpha1.ReasonImagePullFailed,
			message: fmt.Sprintf("pulling image %s for %s failed: %s", n.image, n.what, why)}
	}
	if st.News {
		r.event(s.sbx, false, EventPulled, "Pull", "image %s pulled for %s in %s", n.image, n.what, st.Ended.Sub(st.Started).Round(10*time.Millisecond))
	}
	return nil
}

func pullingMessage(n imageNeed, st imagepuller.State) string {
	msg := fmt.Sprintf("pulling image %s for %s", n.image, n.what)
	if p := st.Progress; p.Layers > 0 {
		msg += fmt.Sprintf(": %d of %d layers", p.LayersDone, p.Layers)
	}
	if st.Waiters > 1 {
		msg += fmt.Sprintf(" (one pull for %d Sandboxes)", st.Waiters)
	}
	return msg
}

// driverReason is the driver's own words for what went wrong; other errors are not shown.
func driverReason(err error) string {
	var derr *dd.Error
	if errors.As(err, &derr) && derr.Reason != "" {
		return derr.Reason
	}
	return "the pull failed"
}

// digestMatches tells whether what a pull of a pinned image brought is that digest: the digest the daemon
// reported for the pull, or failing that one the image is known by. Unpinned images match anything.
func digestMatches(image, reported string, repoDigests []string) bool {
	_, pin, ok := strings.Cut(image, "@")
	if !ok {
		return true
	}
	if reported != "" {
		return reported == pin
	}
	for _, d := range repoDigests {
		if strings.HasSuffix(d, "@"+pin) {
			return true
		}
	}
	return false
}

// checkSize refuses an image the node holds that is larger than it allows for one image. It was not pulled
// for this start (the puller refuses and removes those, see pulledTooLarge), so it stays: it was built or
// loaded on the node, or another Sandbox uses it.
func (r *Reconciler) checkSize(s *scope, n imageNeed, img dd.ImageInfo) bool {
	if r.Options.MaxImageBytes <= 0 || img.Size <= r.Options.MaxImageBytes {
		return false
	}
	s.note(factFailed, dsv1alpha1.ReasonImageTooLarge, "image %s of %s takes %s unpacked, more than the %s node %s allows for one image",
		n.image, n.what, bytesForPeople(img.Size), bytesForPeople(r.Options.MaxImageBytes), r.Options.Node)
	return true
}

// pulledTooLarge is the finding of a pull refused for the image's size: Stalled, since the same image is as
// large at every try; the message says how large, the cap, and what became of the image.
func (r *Reconciler) pulledTooLarge(s *scope, n imageNeed, st imagepuller.State) *finding {
	var big *imagepuller.TooLargeError
	errors.As(st.Err, &big)
	size, after := "takes %s unpacked", "the pulled image was removed"
	switch {
	case big.Packed:
		size, after = "has layers of %s compressed", "the pull was stopped"
	case big.Unpacking:
		size, after = "had unpacked more than %s when it was stopped", "the pull was stopped"
	case !big.Removed:
		after = "the image stays: a container was made from it meanwhile"
	}
	msg := fmt.Sprintf("image %s of %s "+size+", more than the %s node %s allows for one image; %s",
		n.image, n.what, bytesForPeople(big.Bytes), bytesForPeople(big.Max), r.Options.Node, after)
	if st.News {
		r.event(s.sbx, true, EventPullFailed, "Pull", "%s", msg)
	}
	return &finding{fact: factFailed, reason: dsv1alpha1.ReasonImageTooLarge, message: msg}
}

// checkVolumes refuses an image with a VOLUME that no mount of its container covers: Docker would back it
// with an anonymous volume on the host's disk, unbounded and outliving the container.
func (r *Reconciler) checkVolumes(s *scope, n imageNeed, img dd.ImageInfo) bool {
	vs := n.spec.UncoveredVolumes(img.Volumes)
	if len(vs) == 0 {
		return false
	}
	s.note(factFailed, dsv1alpha1.ReasonImageDeclaresVolumes, "image %s of %s declares VOLUME %s; cover each with a scratch mount (spec.scratch) or the workspace",
		n.image, n.what, strings.Join(vs, ", "))
	return true
}

// startID names the start going on: a start waits on each pull once, and policy Always pulls once per start.
func (s *scope) startID() string {
	return fmt.Sprintf("%s/%d", s.sbx.UID, s.gen())
}
