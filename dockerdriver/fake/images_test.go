package fake_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestPullFetchesFromTheRegistryWithProgress(t *testing.T) {
	g := NewWithT(t)
	f := newFake()
	ref := "registry.example/tool@sha256:" + "ab"
	f.AddRegistryImage(ref, fake.RegistryImage{Info: dd.ImageInfo{Volumes: []string{"/data"}}, Delay: 20 * time.Millisecond})
	var steps []dd.PullProgress
	res, err := f.PullImage(context.Background(), ref, nil, func(p dd.PullProgress) { steps = append(steps, p) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Digest).To(Equal("sha256:ab"), "the reference's own pin unless told otherwise")
	g.Expect(steps).To(HaveLen(5), "the layers announced, then one step per layer")
	g.Expect(steps[0]).To(Equal(dd.PullProgress{Layers: 4, BytesTotal: 4 << 20}))
	g.Expect(steps[4].LayersDone).To(Equal(4))
	img, err := f.InspectImage(context.Background(), ref)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(img.Exists).To(BeTrue())
	g.Expect(img.Volumes).To(ConsistOf("/data"))
	g.Expect(f.Calls(fake.OpPullImage)).To(Equal(1))
}

func TestPullFailsLikeARegistry(t *testing.T) {
	g := NewWithT(t)
	f := newFake()
	creds := &dd.RegistryAuth{ServerAddress: "registry.example", Username: "me", Password: "pw"}
	other := dd.RegistryAuth{ServerAddress: "registry.example", Username: "you", Password: "pw2"}
	f.AddRegistryImage("registry.example/private:1", fake.RegistryImage{Auth: creds, OtherAuth: []dd.RegistryAuth{other}, Digest: "sha256:other"})
	f.AddRegistryImage("registry.example/slow:1", fake.RegistryImage{Delay: time.Hour})

	_, err := f.PullImage(context.Background(), "registry.example/none:1", nil, nil)
	g.Expect(dd.IsNotFound(err)).To(BeTrue())
	_, err = f.PullImage(context.Background(), "registry.example/private:1", nil, nil)
	g.Expect(dd.IsConflict(err)).To(BeTrue())
	_, err = f.PullImage(context.Background(), "registry.example/private:1", &dd.RegistryAuth{ServerAddress: "registry.example", Username: "me", Password: "no"}, nil)
	g.Expect(dd.IsConflict(err)).To(BeTrue())
	res, err := f.PullImage(context.Background(), "registry.example/private:1", creds, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Digest).To(Equal("sha256:other"))
	_, err = f.PullImage(context.Background(), "registry.example/private:1", nil, nil)
	g.Expect(dd.IsConflict(err)).To(BeTrue(), "the registry is asked although the node holds the image")
	img, _ := f.InspectImage(context.Background(), "registry.example/private:1")
	g.Expect(img.Exists).To(BeTrue(), "a refused pull leaves the image there")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = f.PullImage(ctx, "registry.example/slow:1", nil, nil)
	g.Expect(dd.IsUncertain(err)).To(BeTrue())
	img, _ = f.InspectImage(context.Background(), "registry.example/slow:1")
	g.Expect(img.Exists).To(BeFalse(), "a pull cut short leaves nothing")

	_, err = f.PullImage(context.Background(), "registry.example/private:1", &other, nil)
	g.Expect(err).NotTo(HaveOccurred(), "another user of the image")

	f.FailNext(fake.OpPullImage, dd.KindUncertain)
	_, err = f.PullImage(context.Background(), "registry.example/private:1", creds, nil)
	g.Expect(dd.IsUncertain(err)).To(BeTrue())
}
