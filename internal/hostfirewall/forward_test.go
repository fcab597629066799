package hostfirewall

import (
	"reflect"
	"testing"

	"github.com/dockside-dev/dockside/internal/testutil/nftrules"
	"github.com/google/nftables/expr"
)

func TestForwardRulesOfTheDefaultConfig(t *testing.T) {
	got, err := ForwardRules(Config{ProxyPort: 3128})
	if err != nil {
		t.Fatal(err)
	}
	closed := func(prefix string) []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte(prefix)},
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte("ds")}, // a prefix: no NUL
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictDrop},
		}
	}
	want := [][]expr.Any{closed("dsi-"), closed("dsn-")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("forward rules differ:\n got %s\nwant %s", nftrules.Describe(got), nftrules.Describe(want))
	}
}

// One rule per closed prefix, in the configured order, each sparing the configured bridges; nothing matches
// the bridges left out (Unrestricted ones by default).
func TestForwardRulesFollowTheConfiguredPrefixes(t *testing.T) {
	got, err := ForwardRules(Config{BridgePrefix: "sbx", ProxyPrefix: "sbx-p", ProxyPort: 1,
		ClosedPrefixes: []string{"sbx-c", "sbx-p", "sbx-z"}})
	if err != nil {
		t.Fatal(err)
	}
	wantIn := []string{"sbx-c", "sbx-p", "sbx-z"}
	if len(got) != len(wantIn) {
		t.Fatalf("%d rules, want %d:%s", len(got), len(wantIn), nftrules.Describe(got))
	}
	for i, exprs := range got {
		if in := exprs[1].(*expr.Cmp); in.Op != expr.CmpOpEq || string(in.Data) != wantIn[i] {
			t.Errorf("rule %d: input match %+v, want eq %q", i+1, in, wantIn[i])
		}
		if out := exprs[3].(*expr.Cmp); out.Op != expr.CmpOpNeq || string(out.Data) != "sbx" {
			t.Errorf("rule %d: output match %+v, want neq %q", i+1, out, "sbx")
		}
	}

	defaults, _ := ForwardRules(Config{ProxyPort: 1})
	for i, exprs := range defaults {
		if in := string(exprs[1].(*expr.Cmp).Data); in == "dsu-" || in == "ds" {
			t.Errorf("rule %d matches input from %q: Unrestricted bridges must not be touched", i+1, in)
		}
	}
}

func TestEveryForwardRuleCountsAndDrops(t *testing.T) {
	got, err := ForwardRules(Config{ProxyPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, exprs := range got {
		if v, ok := exprs[len(exprs)-1].(*expr.Verdict); !ok || v.Kind != expr.VerdictDrop {
			t.Errorf("rule %d ends with %#v, want drop", i+1, exprs[len(exprs)-1])
		}
		if _, ok := exprs[len(exprs)-2].(*expr.Counter); !ok {
			t.Errorf("rule %d: no counter before the verdict", i+1)
		}
	}
}
