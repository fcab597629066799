package subnets

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func mustPool(t *testing.T, cidr string, bits int) *Pool {
	t.Helper()
	p, err := Parse(cidr, bits)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNew(t *testing.T) {
	for name, tc := range map[string]struct {
		cidr  string
		bits  int
		size  int
		error string
	}{
		"default pool":     {cidr: "10.120.0.0/16", bits: 28, size: 4096},
		"one subnet":       {cidr: "10.1.2.0/28", bits: 28, size: 1},
		"not a prefix":     {cidr: "10.120.0.0", bits: 28, error: "not a CIDR prefix"},
		"IPv6":             {cidr: "fd00::/64", bits: 28, error: "IPv4 prefix is needed"},
		"host bits":        {cidr: "10.120.0.1/16", bits: 28, error: "did you mean 10.120.0.0/16"},
		"subnet too big":   {cidr: "10.120.0.0/24", bits: 16, error: "do not fit"},
		"subnet too small": {cidr: "10.120.0.0/24", bits: 31, error: "do not fit"},
		"too many subnets": {cidr: "10.0.0.0/8", bits: 30, error: "more than 2^20"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p, err := Parse(tc.cidr, tc.bits)
			if tc.error != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.error)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Size()).To(Equal(tc.size))
		})
	}
}

func TestAllocate(t *testing.T) {
	g := NewWithT(t)
	p := mustPool(t, "10.120.0.0/26", 28)

	a, err := p.Allocate("a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.String()).To(Equal("10.120.0.0/28"))
	g.Expect(Gateway(a).String()).To(Equal("10.120.0.1"))
	again, _ := p.Allocate("a")
	g.Expect(again).To(Equal(a), "a key asking again keeps its subnet")

	b, _ := p.Allocate("b")
	c, _ := p.Allocate("c")
	d, _ := p.Allocate("d")
	g.Expect([]string{b.String(), c.String(), d.String()}).To(Equal([]string{"10.120.0.16/28", "10.120.0.32/28", "10.120.0.48/28"}))
	g.Expect(p.InUse()).To(Equal(4))

	_, err = p.Allocate("e")
	g.Expect(err).To(MatchError(ErrExhausted))
	g.Expect(err.Error()).To(Equal("no free topology subnet"))

	p.Release("b")
	p.Release("b") // releasing twice, or a key that holds nothing, is fine
	p.Release("nobody")
	e, err := p.Allocate("e")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e).To(Equal(b), "the freed subnet is the only one left")
	g.Expect(p.InUse()).To(Equal(4))

	_, err = p.Allocate("")
	g.Expect(err).To(HaveOccurred())
}

func TestNextFit(t *testing.T) {
	g := NewWithT(t)
	p := mustPool(t, "10.120.0.0/26", 28)
	a, _ := p.Allocate("a")
	p.Release("a")
	b, _ := p.Allocate("b")
	g.Expect(b).NotTo(Equal(a), "a just-freed subnet is reused last")
}

func TestReserve(t *testing.T) {
	sub := netip.MustParsePrefix
	for name, tc := range map[string]struct {
		key   string
		sub   netip.Prefix
		error string
	}{
		"a pool subnet":          {key: "x", sub: sub("10.120.0.32/28")},
		"the held one again":     {key: "a", sub: sub("10.120.0.0/28")},
		"held by another key":    {key: "x", sub: sub("10.120.0.0/28"), error: "already held"},
		"key holds another":      {key: "a", sub: sub("10.120.0.32/28"), error: `"a" already holds 10.120.0.0/28`},
		"outside the pool":       {key: "x", sub: sub("10.121.0.0/28"), error: "not a /28 subnet"},
		"other size":             {key: "x", sub: sub("10.120.0.0/27"), error: "not a /28 subnet"},
		"not aligned":            {key: "x", sub: sub("10.120.0.8/28"), error: "not a /28 subnet"},
		"IPv6":                   {key: "x", sub: sub("fd00::/28"), error: "not a /28 subnet"},
		"empty key":              {key: "", sub: sub("10.120.0.32/28"), error: "non-empty key"},
		"zero prefix (no label)": {key: "x", sub: netip.Prefix{}, error: "not a /28 subnet"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			p := mustPool(t, "10.120.0.0/16", 28)
			_, _ = p.Allocate("a")
			err := p.Reserve(tc.key, tc.sub)
			if tc.error != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.error)))
				g.Expect(p.InUse()).To(Equal(1), "a refused reservation changes nothing")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			got, _ := p.Allocate(tc.key)
			g.Expect(got).To(Equal(tc.sub))
		})
	}
}

// TestRebuild: a restarted agent reserves what Docker's labels say is taken, then never hands it out again.
func TestRebuild(t *testing.T) {
	g := NewWithT(t)
	before := mustPool(t, "10.120.0.0/27", 28)
	held := map[string]netip.Prefix{}
	for _, key := range []string{"a", "b"} {
		held[key], _ = before.Allocate(key)
	}

	after := mustPool(t, "10.120.0.0/27", 28)
	for key, sub := range held {
		g.Expect(after.Reserve(key, sub)).To(Succeed())
	}
	for key, sub := range held {
		got, err := after.Allocate(key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(sub), "a key keeps what it held before the restart")
	}
	_, err := after.Allocate("c")
	g.Expect(err).To(MatchError(ErrExhausted))
	after.Release("a")
	c, err := after.Allocate("c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(held["a"]))
}

func TestExclude(t *testing.T) {
	g := NewWithT(t)
	p := mustPool(t, "10.120.0.0/27", 28)
	a, _ := p.Allocate("a")
	p.Exclude(a)
	p.Exclude(netip.MustParsePrefix("192.168.0.0/28")) // not the pool's: nothing happens
	g.Expect(p.InUse()).To(Equal(1))

	moved, err := p.Allocate("a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(moved).NotTo(Equal(a), "the key lost the subnet something else occupies")
	p.Release("a")
	_, _ = p.Allocate("b")
	_, err = p.Allocate("c")
	g.Expect(err).To(MatchError(ErrExhausted), "an excluded subnet is never handed out")
	g.Expect(p.Reserve("c", a)).NotTo(Succeed())
}

// TestConcurrentAllocation: many holders at once, some asking twice or giving back and asking again as
// retried passes do, never share a subnet, and the pool ends full with one subnet per holder.
func TestConcurrentAllocation(t *testing.T) {
	g := NewWithT(t)
	p := mustPool(t, "10.120.0.0/22", 28) // 64 subnets
	const calls, keys = 300, 150
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", i%keys)
			sub, err := p.Allocate(key)
			if err == nil && i%7 == 0 {
				p.Release(key)
				sub, err = p.Allocate(key)
			}
			if err != nil {
				g.Expect(err).To(MatchError(ErrExhausted))
				return
			}
			g.Expect(p.Base().Contains(sub.Addr())).To(BeTrue())
		})
	}
	wg.Wait()

	g.Expect(p.InUse()).To(Equal(64))
	g.Expect(p.byKey).To(HaveLen(64))
	for key, slot := range p.byKey {
		g.Expect(p.holder[slot]).To(Equal(key), "slot %d is held by exactly one key", slot)
	}
}
