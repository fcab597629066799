package hostfirewall

import (
	"reflect"
	"testing"

	"github.com/dockside-dev/dockside/internal/testutil/nftrules"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

func TestRulesOfTheDefaultConfig(t *testing.T) {
	got, err := Rules(Config{ProxyPort: 3128})
	if err != nil {
		t.Fatal(err)
	}
	iif := func(prefix string) []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(prefix)},
		}
	}
	established := []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(2 | 4), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
	}
	dport3128 := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{6}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0x0c, 0x38}}, // 3128, big-endian
	}
	want := [][]expr.Any{
		append(append(iif("ds"), established...), &expr.Verdict{Kind: expr.VerdictAccept}),
		append(append(iif("dsi-"), dport3128...), &expr.Verdict{Kind: expr.VerdictAccept}),
		append(iif("ds"), &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules differ:\n got %s\nwant %s", nftrules.Describe(got), nftrules.Describe(want))
	}
}

// The prefix bytes are compared without a NUL: with one, "ds" would match only an interface named exactly "ds".
func TestInterfaceMatchIsAPrefixOfTheConfiguredBytes(t *testing.T) {
	got, err := Rules(Config{BridgePrefix: "sbx", ProxyPrefix: "sbx-proxy", ProxyPort: 1, ClosedPrefixes: []string{"sbx-proxy"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"sbx", "sbx-proxy", "sbx"} {
		cmp, ok := got[i][1].(*expr.Cmp)
		if !ok || string(cmp.Data) != want || cmp.Op != expr.CmpOpEq {
			t.Errorf("rule %d: interface match %#v, want eq %q", i+1, got[i][1], want)
		}
	}
}

func TestProxyPortIsInNetworkByteOrder(t *testing.T) {
	for port, want := range map[uint16][]byte{1: {0, 1}, 8080: {0x1f, 0x90}, 65535: {0xff, 0xff}} {
		got, err := Rules(Config{ProxyPort: port})
		if err != nil {
			t.Fatal(err)
		}
		exprs := got[1]
		cmp := exprs[len(exprs)-2].(*expr.Cmp)
		if !reflect.DeepEqual(cmp.Data, want) {
			t.Errorf("port %d: compared with %x, want %x", port, cmp.Data, want)
		}
		if proto := exprs[3].(*expr.Cmp); !reflect.DeepEqual(proto.Data, []byte{unix.IPPROTO_TCP}) {
			t.Errorf("port %d: protocol %x, want tcp", port, proto.Data)
		}
	}
}

func TestOnlyTheLastRuleDropsAndCountsAndNothingFollowsIt(t *testing.T) {
	got, err := Rules(Config{ProxyPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	verdicts := []expr.VerdictKind{expr.VerdictAccept, expr.VerdictAccept, expr.VerdictDrop}
	if len(got) != len(verdicts) {
		t.Fatalf("%d rules, want %d", len(got), len(verdicts))
	}
	for i, exprs := range got {
		v, ok := exprs[len(exprs)-1].(*expr.Verdict)
		if !ok || v.Kind != verdicts[i] {
			t.Errorf("rule %d ends with %#v, want verdict %d", i+1, exprs[len(exprs)-1], verdicts[i])
		}
		_, counts := exprs[len(exprs)-2].(*expr.Counter)
		if counts != (i == 2) {
			t.Errorf("rule %d: counter before the verdict is %v", i+1, counts)
		}
	}
}
