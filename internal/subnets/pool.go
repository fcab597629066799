// Package subnets hands out the small IPv4 subnets of per-topology bridges from one pool of address space.
// It is bookkeeping only: the agent records each subnet in its network's Docker labels and, after a restart,
// rebuilds the pool from them with Reserve, so the pool holds nothing that a restart would lose.
package subnets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
)

// ErrExhausted: every subnet of the pool is held.
var ErrExhausted = errors.New("no free topology subnet")

// maxSplit bounds how many subnets one pool may hold (2^20), so that a search stays cheap.
const maxSplit = 20

// outside is the holder of subnets that something other than the pool's users occupies (see Exclude). Keys
// of users are never empty, so it cannot collide with one.
const outside = ""

// Pool splits an IPv4 prefix into subnets of one size. Each holder (a key, e.g. a Sandbox UID) holds at most
// one subnet, and no subnet is ever held twice. It is safe for concurrent use.
type Pool struct {
	base  netip.Prefix
	bits  int // prefix length of each subnet
	slots int // number of subnets in base

	mu     sync.Mutex
	byKey  map[string]int // holder -> slot
	holder map[int]string // slot -> holder
	next   int            // where the next search starts (next fit: a freed subnet is reused last)
}

// New splits base (a masked IPv4 prefix, e.g. 10.120.0.0/16) into subnets of prefix length bits (e.g. 28).
func New(base netip.Prefix, bits int) (*Pool, error) {
	switch {
	case !base.IsValid() || !base.Addr().Is4():
		return nil, fmt.Errorf("topology pool %s: an IPv4 prefix is needed", base)
	case base.Masked() != base:
		return nil, fmt.Errorf("topology pool %s has host bits set; did you mean %s?", base, base.Masked())
	case bits < base.Bits() || bits > 30:
		return nil, fmt.Errorf("topology subnets of /%d do not fit pool %s (between /%d and /30)", bits, base, base.Bits())
	case bits-base.Bits() > maxSplit:
		return nil, fmt.Errorf("topology pool %s holds more than 2^%d subnets of /%d; use a smaller pool", base, maxSplit, bits)
	}
	return &Pool{base: base, bits: bits, slots: 1 << (bits - base.Bits()), byKey: map[string]int{}, holder: map[int]string{}}, nil
}

// Parse is New from a CIDR string.
func Parse(cidr string, bits int) (*Pool, error) {
	base, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("topology pool %q is not a CIDR prefix: %w", cidr, err)
	}
	return New(base, bits)
}

// Base is the pool's whole prefix.
func (p *Pool) Base() netip.Prefix { return p.base }

// Size is how many subnets the pool holds.
func (p *Pool) Size() int { return p.slots }

// InUse is how many subnets are held now (excluded ones included).
func (p *Pool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.holder)
}

// Allocate returns key's subnet, taking a free one if key holds none yet; ErrExhausted when none is free.
// Asking again for the same key returns the same subnet, so a retried step never takes a second one.
func (p *Pool) Allocate(key string) (netip.Prefix, error) {
	if key == outside {
		return netip.Prefix{}, errors.New("a subnet holder needs a non-empty key")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slot, ok := p.byKey[key]; ok {
		return p.subnet(slot), nil
	}
	for i := range p.slots {
		slot := (p.next + i) % p.slots
		if _, held := p.holder[slot]; !held {
			p.take(key, slot)
			p.next = (slot + 1) % p.slots
			return p.subnet(slot), nil
		}
	}
	return netip.Prefix{}, ErrExhausted
}

// Reserve records that key holds sub (read back from a network's labels after a restart). It fails when sub
// is not one of the pool's subnets (the pool was changed since), when another holder has it, or when key
// already holds a different one; the pool is then left as it was.
func (p *Pool) Reserve(key string, sub netip.Prefix) error {
	if key == outside {
		return errors.New("a subnet holder needs a non-empty key")
	}
	slot, ok := p.slot(sub)
	if !ok {
		return fmt.Errorf("%s is not a /%d subnet of the topology pool %s", sub, p.bits, p.base)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if have, ok := p.holder[slot]; ok && have != key {
		return fmt.Errorf("%s is already held", sub)
	}
	if have, ok := p.byKey[key]; ok && have != slot {
		return fmt.Errorf("%q already holds %s", key, p.subnet(have))
	}
	p.take(key, slot)
	return nil
}

// Exclude marks sub as occupied by something outside the pool's bookkeeping (a network another agent or a
// person made in the same range), taking it from whichever key held it, so that it is never handed out
// again by this pool. It is a no-op for a prefix that is not one of the pool's subnets.
func (p *Pool) Exclude(sub netip.Prefix) {
	slot, ok := p.slot(sub)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if key, ok := p.holder[slot]; ok {
		delete(p.byKey, key)
	}
	p.holder[slot] = outside
}

// Release frees key's subnet, if it holds one.
func (p *Pool) Release(key string) {
	if key == outside {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slot, ok := p.byKey[key]; ok {
		delete(p.byKey, key)
		delete(p.holder, slot)
	}
}

// Gateway is the address a bridge on sub takes for itself: the first host address.
func Gateway(sub netip.Prefix) netip.Addr { return sub.Masked().Addr().Next() }

func (p *Pool) take(key string, slot int) {
	p.byKey[key] = slot
	p.holder[slot] = key
}

// subnet is the prefix of slot: the base address plus slot subnets of 2^(32-bits) addresses.
func (p *Pool) subnet(slot int) netip.Prefix {
	n := number(p.base.Addr()) + uint32(slot)<<(32-p.bits)
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	return netip.PrefixFrom(netip.AddrFrom4(b), p.bits)
}

// slot is the index of sub, if sub is exactly one of the pool's subnets.
func (p *Pool) slot(sub netip.Prefix) (int, bool) {
	if !sub.IsValid() || sub.Bits() != p.bits || sub.Masked() != sub || !p.base.Contains(sub.Addr()) {
		return 0, false
	}
	return int((number(sub.Addr()) - number(p.base.Addr())) >> (32 - p.bits)), true
}

func number(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}
