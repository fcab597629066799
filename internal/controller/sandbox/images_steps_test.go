package sandbox

import (
	"cmp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
)

// Images of the image tests that the node does not hold until a case makes them so.
const (
	pulledImage = "dockside.dev/pulled:local"
	pinnedImage = "dockside.dev/pinned@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

func withImage(image string, policy dsv1alpha1.PullPolicy) func(*dsv1alpha1.Sandbox) {
	return func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.Image, sbx.Spec.ImagePullPolicy = image, policy }
}

func TestEnsureImages(t *testing.T) {
	pullable := func(h *harness, s *scope) { h.docker.AddRegistryImage(pulledImage, fake.RegistryImage{}) }
	noPulls := func(g Gomega, h *harness, s *scope) {
		g.Expect(h.docker.Calls(fake.OpPullImage)).To(BeZero())
	}
	runStepCases(t, (*Reconciler).ensureImages, []stepCase{
		{
			name:  "images the node holds let the start go on, without a pull",
			sbx:   atTopology(newSandbox("s"), 1),
			check: noPulls,
		},
		{
			name: "a start that is over needs no image",
			sbx:  withStarted(atTopology(newSandbox("s", withImage(pulledImage, "")), 1)),
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.docker.Calls(fake.OpInspectImage)).To(BeZero())
			},
		},
		{
			name:    "an image missing from the node is pulled in the background while the pass waits",
			sbx:     atTopology(newSandbox("s", withImage(pulledImage, "")), 1),
			docker:  pullable,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonImagePulling},
			message: "pulling image " + pulledImage + " for the primary container",
			events:  []string{"Normal " + EventPulling},
		},
		{
			name:    "a service's image is waited for too",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, newService("db")),
			objects: []client.Object{newService("db", func(svc *dsv1alpha1.SandboxService) { svc.Spec.Image = pulledImage })},
			docker:  pullable,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonImagePulling},
			message: "for service db",
			events:  []string{"Normal " + EventPulling},
		},
		{
			name:    "a node that runs only pinned images refuses an unpinned one",
			sbx:     atTopology(newSandbox("s"), 1),
			docker:  func(h *harness, s *scope) { h.r.Options.RequireDigest = true },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageNotPinned},
			message: testImage,
			check:   noPulls,
		},
		{
			name:   "pull policy Never and no image on the node: Stalled, looked at again later",
			sbx:    atTopology(newSandbox("s", withImage(pulledImage, dsv1alpha1.PullNever)), 1),
			docker: pullable,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageNotPresent},
			check: func(g Gomega, h *harness, s *scope) {
				noPulls(g, h, s)
				g.Expect(s.recheck).To(Equal(specRetry))
			},
		},
		{
			name: "an image with a VOLUME no mount covers is refused",
			sbx:  atTopology(newSandbox("s", withImage(pulledImage, "")), 1),
			docker: func(h *harness, s *scope) {
				h.docker.AddImage(pulledImage, dd.ImageInfo{Volumes: []string{"/data", "/workspace"}})
			},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageDeclaresVolumes},
			message: "declares VOLUME /data;",
		},
		{
			name: "an image on the node larger than the node allows is refused, and stays",
			sbx:  atTopology(newSandbox("s", withImage(pulledImage, "")), 1),
			docker: func(h *harness, s *scope) {
				h.docker.AddImage(pulledImage, dd.ImageInfo{Size: 3 * testMaxImageBytes / 2})
			},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageTooLarge},
			message: "image " + pulledImage + " of the primary container takes 1.5 GiB unpacked, more than the 1.0 GiB node node-a allows for one image",
			check: func(g Gomega, h *harness, s *scope) {
				noPulls(g, h, s)
				g.Expect(h.docker.Calls(fake.OpRemoveImage)).To(BeZero(), "not pulled for it")
			},
		},
		{
			name:    "Docker unavailable while inspecting an image: retried",
			sbx:     atTopology(newSandbox("s"), 1),
			faults:  func(h *harness) { h.docker.FailNext(fake.OpInspectImage, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "inspecting the image of the primary container failed",
		},
	}, (*Reconciler).trackStartup)
}

// TestEnsureImagesAfterAPull follows a pull to its end: the pass that starts it waits, and the pass after it
// ends goes on, or refuses what it brought.
func TestEnsureImagesAfterAPull(t *testing.T) {
	for _, tc := range []struct {
		name    string
		image   string
		digest  string // what the registry reports for the pull
		packed  int64  // the compressed layers it announces; 0: a few MiB
		size    int64  // what the image takes once pulled
		watched bool   // the puller watches the disk as the pull unpacks
		stop    bool
		want    outcome
		message string
		event   string // the Event of the pull's end; "": Normal Pulled
	}{
		{name: "the image brought lets the start go on", image: pulledImage, want: building},
		{name: "a pinned image brought at its digest lets the start go on", image: pinnedImage, want: building},
		{
			name: "a pinned image that brought other content is refused", image: pinnedImage, digest: "sha256:" + strings.Repeat("b", 64),
			stop: true, want: outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageDigestMismatch},
			message: "not the digest it is pinned to",
		},
		{
			name: "an image larger unpacked than the node allows is refused and removed", image: pulledImage, size: 3 * testMaxImageBytes / 2,
			stop: true, want: outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageTooLarge},
			message: "image " + pulledImage + " of the primary container takes 1.5 GiB unpacked, more than the 1.0 GiB node node-a allows for one image; the pulled image was removed",
			event:   "Warning " + EventPullFailed,
		},
		{
			name: "a pull whose layers the registry announces larger than the node allows is stopped", image: pulledImage, packed: 2 * testMaxImageBytes,
			stop: true, want: outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageTooLarge},
			message: "image " + pulledImage + " of the primary container has layers of 2.0 GiB compressed, more than the 1.0 GiB node node-a allows for one image; the pull was stopped",
			event:   "Warning " + EventPullFailed,
		},
		{
			name: "a pull that unpacks more than the node allows is stopped", image: pulledImage, size: 8 * testMaxImageBytes, watched: true,
			stop: true, want: outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonImageTooLarge},
			message: "image " + pulledImage + " of the primary container had unpacked more than 2.0 GiB when it was stopped, more than the 1.0 GiB node node-a allows for one image; the pull was stopped",
			event:   "Warning " + EventPullFailed,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			sbx := atTopology(newSandbox("s", withImage(tc.image, "")), 1)
			h := newHarness(t, sbx.DeepCopy())
			if tc.watched {
				h.r.Images.WatchDisk(h.docker.Disk)
			}
			h.docker.AddRegistryImage(tc.image, fake.RegistryImage{Digest: tc.digest, Packed: tc.packed, Info: dd.ImageInfo{Size: tc.size}})

			s, stop, err := h.imagesPass(sbx)
			g.Expect(stop).To(BeTrue())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(outcomeOf(s).reason).To(Equal(dsv1alpha1.ReasonImagePulling))
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Normal " + EventPulling}))
			select {
			case <-h.pulled:
			case <-time.After(time.Minute):
				t.Fatal("the pull never ended")
			}

			s, stop, err = h.imagesPass(sbx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(stop).To(Equal(tc.stop))
			g.Expect(outcomeOf(s).message).To(ContainSubstring(tc.message))
			got := outcomeOf(s)
			got.message = ""
			g.Expect(got).To(Equal(tc.want))
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{cmp.Or(tc.event, "Normal "+EventPulled)}), "the pull's end is news once")
			g.Expect(h.docker.Calls(fake.OpPullImage)).To(Equal(1))
			if tc.want.reason == dsv1alpha1.ReasonImageTooLarge {
				img, _ := h.docker.InspectImage(t.Context(), tc.image)
				g.Expect(img.Exists).To(BeFalse(), "pulled for nothing, or never whole")
			}

			_, stop, err = h.imagesPass(sbx)
			g.Expect(stop).To(Equal(tc.stop))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(recorder.Drain(h.events)).To(BeEmpty(), "no news")
		})
	}
}
