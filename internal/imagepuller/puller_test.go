package imagepuller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// newTestPuller returns a puller over a fake daemon, and the channel its wakeups arrive on.
func newTestPuller(t *testing.T) (*Puller, *fake.Driver, chan types.NamespacedName) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	docker := fake.New("node-a")
	out := make(chan types.NamespacedName, 64)
	records, err := OpenRecords("")
	if err != nil {
		t.Fatal(err)
	}
	return New(ctx, docker, records, 0, func(key types.NamespacedName) { out <- key }), docker, out
}

func request(ref, name string, until time.Duration) Request {
	return Request{
		Ref: ref, Waiter: types.NamespacedName{Namespace: "ns", Name: name}, Start: name + "/1", Until: time.Now().Add(until),
	}
}

// woken collects the names of the Sandboxes woken within d.
func woken(out <-chan types.NamespacedName, d time.Duration) map[string]int {
	got := map[string]int{}
	deadline := time.After(d)
	for {
		select {
		case ev := <-out:
			got[ev.Name]++
		case <-deadline:
			return got
		}
	}
}

func TestPullerMakesOnePullForManyWaitersAndWakesThemAll(t *testing.T) {
	g := NewWithT(t)
	p, docker, out := newTestPuller(t)
	docker.AddRegistryImage("reg.example/a:1", fake.RegistryImage{Delay: 200 * time.Millisecond})

	first := p.Pull(request("reg.example/a:1", "one", time.Minute))
	g.Expect(first.Pulling).To(BeTrue())
	g.Expect(first.News).To(BeTrue())
	g.Expect(p.Pull(request("reg.example/a:1", "one", time.Minute)).News).To(BeFalse(), "joining twice is no news")
	second := p.Pull(request("reg.example/a:1", "two", time.Minute))
	g.Expect(second.Waiters).To(Equal(2))

	st, joined := p.Joined(request("reg.example/a:1", "two", time.Minute))
	g.Expect(joined).To(BeTrue(), "a start waits on the pull it joined until the pull has ended")
	g.Expect(st.Pulling).To(BeTrue())
	_, joined = p.Joined(request("reg.example/a:1", "three", time.Minute))
	g.Expect(joined).To(BeFalse(), "a start that did not join it does not wait on it")

	g.Eventually(func() int { return woken(out, 50*time.Millisecond)["two"] }).Should(BeNumerically(">=", 1))
	g.Eventually(func() bool { _, ok := p.Brought(request("reg.example/a:1", "one", time.Minute)); return ok }).Should(BeTrue())
	g.Expect(docker.Calls(fake.OpPullImage)).To(Equal(1))

	st, ok := p.Brought(request("reg.example/a:1", "two", time.Minute))
	g.Expect(ok).To(BeTrue())
	g.Expect(st.News).To(BeTrue())
	st, _ = p.Brought(request("reg.example/a:1", "two", time.Minute))
	g.Expect(st.News).To(BeFalse(), "the end is news once")
	_, joined = p.Joined(request("reg.example/a:1", "two", time.Minute))
	g.Expect(joined).To(BeFalse(), "an ended pull is waited on no more")
	_, ok = p.Brought(request("reg.example/a:1", "three", time.Minute))
	g.Expect(ok).To(BeFalse(), "a start that did not wait on it was not brought anything by it")
}

func TestPullerBacksOffFailuresForEveryWaiter(t *testing.T) {
	g := NewWithT(t)
	p, docker, _ := newTestPuller(t)
	p.Pull(request("reg.example/missing:1", "one", time.Minute))
	var st State
	g.Eventually(func() error {
		st = p.Pull(request("reg.example/missing:1", "two", time.Minute))
		return st.Err
	}).Should(HaveOccurred())
	g.Expect(dd.IsNotFound(st.Err)).To(BeTrue())
	g.Expect(st.RetryAt).To(BeTemporally("~", st.Ended.Add(pullRetryMin), 10*time.Millisecond))
	g.Expect(docker.Calls(fake.OpPullImage)).To(Equal(1), "no second pull before the backoff runs out")

	g.Eventually(func() bool { return p.Pull(request("reg.example/missing:1", "two", time.Minute)).Pulling }, 2*time.Second).Should(BeTrue())
	g.Eventually(func() int { return docker.Calls(fake.OpPullImage) }).Should(Equal(2))
	g.Eventually(func() time.Duration {
		st := p.Pull(request("reg.example/missing:1", "two", time.Minute))
		return st.RetryAt.Sub(st.Ended)
	}).Should(Equal(2*pullRetryMin), "the backoff doubles")
}

func TestPullerRunsUntilTheLastWaitersDeadline(t *testing.T) {
	g := NewWithT(t)
	p, docker, _ := newTestPuller(t)
	docker.AddRegistryImage("reg.example/slow:1", fake.RegistryImage{Delay: time.Hour})
	start := time.Now()
	late := request("reg.example/slow:1", "late", 400*time.Millisecond)
	p.Pull(request("reg.example/slow:1", "early", 100*time.Millisecond))
	p.Pull(late)

	var st State
	g.Eventually(func() bool {
		st = p.Pull(late)
		return st.Pulling
	}, 2*time.Second).Should(BeFalse())
	g.Expect(st.Ended.Sub(start)).To(BeNumerically(">=", 400*time.Millisecond))
	g.Expect(dd.IsUncertain(st.Err)).To(BeTrue())
}

func TestPullerKeepsCredentialsApart(t *testing.T) {
	g := NewWithT(t)
	p, docker, _ := newTestPuller(t)
	docker.AddRegistryImage("reg.example/private:1", fake.RegistryImage{Delay: 100 * time.Millisecond})
	mine := request("reg.example/private:1", "mine", time.Minute)
	mine.Auth = &dd.RegistryAuth{ServerAddress: "reg.example", Username: "me", Password: "a"}
	theirs := request("reg.example/private:1", "theirs", time.Minute)
	theirs.Auth = &dd.RegistryAuth{ServerAddress: "reg.example", Username: "me", Password: "b"}
	p.Pull(mine)
	g.Expect(p.Pull(theirs).Waiters).To(Equal(1))
	g.Eventually(func() int { return docker.Calls(fake.OpPullImage) }).Should(Equal(2))
}
