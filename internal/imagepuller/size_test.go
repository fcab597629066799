package imagepuller

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// cappedPuller is newTestPuller with a cap of maxBytes on one image.
func cappedPuller(t *testing.T, maxBytes int64) (*Puller, *fake.Driver) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	docker := fake.New("node-a")
	records, err := OpenRecords("")
	if err != nil {
		t.Fatal(err)
	}
	return New(ctx, docker, records, maxBytes, func(types.NamespacedName) {}), docker
}

// ended starts the pull of req's image, waits for it to end and returns how.
func ended(g *WithT, p *Puller, req Request) State {
	p.Pull(req)
	g.Eventually(func() bool { _, running := p.Joined(req); return running }, 10*time.Second, 10*time.Millisecond).Should(BeFalse())
	if st, ok := p.Brought(req); ok {
		return st
	}
	return p.Pull(req) // failed, and within its backoff: how it failed
}

func TestPullStopsWhenTheAnnouncedLayersPassTheCap(t *testing.T) {
	g := NewWithT(t)
	p, docker := cappedPuller(t, 100<<20)
	// Its layers are announced with the first step; the rest would take a minute.
	docker.AddRegistryImage("reg.example/big:1", fake.RegistryImage{Packed: 300 << 20, Delay: time.Minute, Info: dd.ImageInfo{Size: 900 << 20}})

	started := time.Now()
	st := ended(g, p, request("reg.example/big:1", "one", time.Hour))
	var big *TooLargeError
	g.Expect(errors.As(st.Err, &big)).To(BeTrue(), "got %v", st.Err)
	g.Expect(*big).To(Equal(TooLargeError{Ref: "reg.example/big:1", Bytes: 300 << 20, Max: 100 << 20, Packed: true}))
	g.Expect(time.Since(started)).To(BeNumerically("<", 45*time.Second), "stopped, not pulled to its end")
	img, _ := docker.InspectImage(context.Background(), "reg.example/big:1")
	g.Expect(img.Exists).To(BeFalse())
	g.Expect(p.Pull(request("reg.example/big:1", "two", time.Hour)).Err).To(Equal(st.Err), "not pulled again within any start's deadline")
	g.Expect(docker.Calls(fake.OpPullImage)).To(Equal(1))
}

func TestAnImagePulledLargerThanTheCapIsRemoved(t *testing.T) {
	g := NewWithT(t)
	p, docker := cappedPuller(t, 100<<20)
	// Small compressed, large unpacked: only the pulled image tells.
	docker.AddRegistryImage("reg.example/sparse:1", fake.RegistryImage{Packed: 10 << 20, Info: dd.ImageInfo{Size: 150 << 20}})
	docker.AddRegistryImage("reg.example/fits:1", fake.RegistryImage{Packed: 10 << 20, Info: dd.ImageInfo{Size: 100 << 20}})

	st := ended(g, p, request("reg.example/sparse:1", "one", time.Hour))
	var big *TooLargeError
	g.Expect(errors.As(st.Err, &big)).To(BeTrue(), "got %v", st.Err)
	g.Expect(*big).To(Equal(TooLargeError{Ref: "reg.example/sparse:1", Bytes: 150 << 20, Max: 100 << 20, Removed: true}))
	img, _ := docker.InspectImage(context.Background(), "reg.example/sparse:1")
	g.Expect(img.Exists).To(BeFalse(), "pulled for nothing, so removed")

	st = ended(g, p, request("reg.example/fits:1", "two", time.Hour))
	g.Expect(st.Err).NotTo(HaveOccurred(), "at the cap is within it")
	img, _ = docker.InspectImage(context.Background(), "reg.example/fits:1")
	g.Expect(img.Exists).To(BeTrue())
}

func TestNoCapPullsAnySize(t *testing.T) {
	g := NewWithT(t)
	p, docker := cappedPuller(t, 0)
	docker.AddRegistryImage("reg.example/huge:1", fake.RegistryImage{Packed: 300 << 30, Info: dd.ImageInfo{Size: 900 << 30}})
	g.Expect(ended(g, p, request("reg.example/huge:1", "one", time.Hour)).Err).NotTo(HaveOccurred())
}

// watchedPuller is cappedPuller watching the fake's disk.
func watchedPuller(t *testing.T, maxBytes int64) (*Puller, *fake.Driver) {
	p, docker := cappedPuller(t, maxBytes)
	return p.WatchDisk(docker.Disk), docker
}

// diskUsed is what the fake's disk holds.
func diskUsed(g *WithT, docker *fake.Driver) int64 {
	size, free, err := docker.Disk()
	g.Expect(err).NotTo(HaveOccurred())
	return int64(size - free)
}

func TestAPullStopsWhenWhatItUnpackedPassesTheCap(t *testing.T) {
	g := NewWithT(t)
	p, docker := watchedPuller(t, 100<<20)
	// A decompression bomb: 10 MiB compressed, 900 MiB unpacked, a quarter of it with each of four layers.
	docker.AddRegistryImage("reg.example/bomb:1", fake.RegistryImage{Packed: 10 << 20, Delay: 4 * time.Second, Info: dd.ImageInfo{Size: 900 << 20}})

	st := ended(g, p, request("reg.example/bomb:1", "one", time.Hour))
	var big *TooLargeError
	g.Expect(errors.As(st.Err, &big)).To(BeTrue(), "got %v", st.Err)
	g.Expect(*big).To(Equal(TooLargeError{Ref: "reg.example/bomb:1", Bytes: 225<<20 - 10<<20, Max: 100 << 20, Unpacking: true}),
		"the first layer's 225 MiB less the 10 MiB of compressed layers the disk may hold meanwhile")
	g.Expect(st.Err).To(MatchError("image reg.example/bomb:1 had unpacked more than 225443840 bytes, more than the 104857600 bytes this node allows for one image"))
	g.Expect(st.Progress.LayersDone).To(Equal(1), "stopped at its first layer, not pulled to its end")
	img, _ := docker.InspectImage(context.Background(), "reg.example/bomb:1")
	g.Expect(img.Exists).To(BeFalse())
	g.Expect(diskUsed(g, docker)).To(BeZero(), "the disk is as it was")
	g.Expect(p.Pull(request("reg.example/bomb:1", "two", time.Hour)).Err).To(Equal(st.Err), "not pulled again within any start's deadline")

	docker.AddRegistryImage("reg.example/fits:1", fake.RegistryImage{Packed: 10 << 20, Delay: 40 * time.Millisecond, Info: dd.ImageInfo{Size: 100 << 20}})
	g.Expect(ended(g, p, request("reg.example/fits:1", "three", time.Hour)).Err).NotTo(HaveOccurred(), "at the cap is within it")
	g.Expect(diskUsed(g, docker)).To(BeEquivalentTo(100 << 20))
}

// The disk does not tell pulls apart: while two run, each may take the cap, and what passes it alone is
// found once it is pulled.
func TestPullsRunningTogetherShareTheDisksGrowth(t *testing.T) {
	g := NewWithT(t)
	p, docker := watchedPuller(t, 100<<20)
	docker.AddRegistryImage("reg.example/slow:1", fake.RegistryImage{Packed: 1 << 20, Delay: time.Hour, Info: dd.ImageInfo{Size: 1 << 20}})
	docker.AddRegistryImage("reg.example/big:1", fake.RegistryImage{Packed: 1 << 20, Delay: 40 * time.Millisecond, Info: dd.ImageInfo{Size: 150 << 20}})
	g.Expect(p.Pull(request("reg.example/slow:1", "one", time.Hour)).Pulling).To(BeTrue())

	st := ended(g, p, request("reg.example/big:1", "two", time.Hour))
	var big *TooLargeError
	g.Expect(errors.As(st.Err, &big)).To(BeTrue(), "got %v", st.Err)
	g.Expect(*big).To(Equal(TooLargeError{Ref: "reg.example/big:1", Bytes: 150 << 20, Max: 100 << 20, Removed: true}), "found once pulled")
	g.Expect(diskUsed(g, docker)).To(BeZero())
}

// A pull stopped for what the disk took while others ran is not known to be the large one: it fails as
// Uncertain, tried again with the usual backoff, not refused for an hour.
func TestAPullStoppedAmongOthersIsTriedAgain(t *testing.T) {
	g := NewWithT(t)
	p, docker := watchedPuller(t, 100<<20)
	docker.AddRegistryImage("reg.example/slow:1", fake.RegistryImage{Packed: 1 << 20, Delay: time.Hour, Info: dd.ImageInfo{Size: 1 << 20}})
	docker.AddRegistryImage("reg.example/bomb:1", fake.RegistryImage{Packed: 10 << 20, Delay: 4 * time.Second, Info: dd.ImageInfo{Size: 900 << 20}})
	g.Expect(p.Pull(request("reg.example/slow:1", "one", time.Hour)).Pulling).To(BeTrue())

	st := ended(g, p, request("reg.example/bomb:1", "two", time.Hour))
	g.Expect(errors.As(st.Err, new(*TooLargeError))).To(BeFalse(), "got %v", st.Err)
	g.Expect(dd.KindOf(st.Err)).To(Equal(dd.KindUncertain))
	g.Expect(st.Err).To(MatchError(ContainSubstring("the node's disk grew by 225443840 bytes while 2 pulls ran, more than 104857600 bytes each allows")))
	g.Expect(st.RetryAt.Sub(st.Ended)).To(Equal(pullRetryMin), "tried again as any failed pull")
	g.Expect(diskUsed(g, docker)).To(BeZero())
}
