package hostfirewall

import (
	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ChainName is the table's chain on the input hook: it sees what is addressed to the host itself and nothing
// that the host forwards between a bridge and the outside (that is ForwardChainName's).
const ChainName = "input"

// reg is the register every expression loads into and compares: nft's own choice for these matches.
const reg = 1

// Rules returns the expressions of the input chain's rules, in order, for cfg with its defaults filled in:
//
//  1. iifname "<BridgePrefix>*" ct state established,related accept
//  2. iifname "<ProxyPrefix>*" tcp dport <ProxyPort> accept
//  3. iifname "<BridgePrefix>*" counter drop
func Rules(cfg Config) ([][]expr.Any, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return rules(cfg), nil
}

func rules(cfg Config) [][]expr.Any {
	return [][]expr.Any{
		concat(iifnamePrefix(cfg.BridgePrefix), ctStateEstablishedRelated(), verdict(expr.VerdictAccept)),
		concat(iifnamePrefix(cfg.ProxyPrefix), tcpDport(cfg.ProxyPort), verdict(expr.VerdictAccept)),
		concat(iifnamePrefix(cfg.BridgePrefix), []expr.Any{&expr.Counter{}}, verdict(expr.VerdictDrop)),
	}
}

// table and baseChain are the objects cfg's rules live in.
func table(cfg Config) *nftables.Table {
	return &nftables.Table{Name: cfg.Table, Family: nftables.TableFamilyINet}
}

// baseChain is a filter chain on hook that accepts what its rules do not drop.
func baseChain(t *nftables.Table, name string, hook *nftables.ChainHook) *nftables.Chain {
	return &nftables.Chain{
		Name:     name,
		Table:    t,
		Type:     nftables.ChainTypeFilter,
		Hooknum:  hook,
		Priority: nftables.ChainPriorityFilter,
		Policy:   ref(nftables.ChainPolicyAccept),
	}
}

// iifnamePrefix matches an input interface whose name starts with prefix: the kernel compares only as many
// bytes as the operand has, so leaving out the name's NUL padding makes the comparison a prefix match, which
// is what nft writes for iifname "prefix*".
func iifnamePrefix(prefix string) []expr.Any {
	return ifnamePrefix(expr.MetaKeyIIFNAME, expr.CmpOpEq, prefix)
}

// oifnameNotPrefix matches an output interface whose name does not start with prefix (oifname != "prefix*").
func oifnameNotPrefix(prefix string) []expr.Any {
	return ifnamePrefix(expr.MetaKeyOIFNAME, expr.CmpOpNeq, prefix)
}

func ifnamePrefix(key expr.MetaKey, op expr.CmpOp, prefix string) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: key, Register: reg},
		&expr.Cmp{Op: op, Register: reg, Data: []byte(prefix)},
	}
}

// ctStateEstablishedRelated matches the state bits ESTABLISHED or RELATED. Conntrack keeps the state in host
// byte order, so mask and zero are too.
func ctStateEstablishedRelated() []expr.Any {
	return []expr.Any{
		&expr.Ct{Key: expr.CtKeySTATE, Register: reg},
		&expr.Bitwise{
			SourceRegister: reg,
			DestRegister:   reg,
			Len:            4,
			Mask:           binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:            binaryutil.NativeEndian.PutUint32(0),
		},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

// tcpDport matches TCP to port, which is read from the packet and so compared in network byte order.
func tcpDport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

func verdict(kind expr.VerdictKind) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: kind}}
}

func concat(parts ...[]expr.Any) []expr.Any {
	var all []expr.Any
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

func ref[T any](v T) *T { return &v }
