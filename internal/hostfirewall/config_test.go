package hostfirewall

import (
	"reflect"
	"strings"
	"testing"
)

func TestDefaultsFillOnlyEmptyFields(t *testing.T) {
	got, err := Config{ProxyPort: 3128}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Table: "dockside", BridgePrefix: "ds", ProxyPrefix: "dsi-", ProxyPort: 3128,
		ClosedPrefixes: []string{"dsi-", "dsn-"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: got %+v, want %+v", got, want)
	}

	own := Config{Table: "t", BridgePrefix: "x", ProxyPrefix: "xp", ProxyPort: 1, ClosedPrefixes: []string{"xc"}, NetNSFd: 7}
	if got, err := own.withDefaults(); err != nil || !reflect.DeepEqual(got, own) {
		t.Errorf("a full config changed: got %+v, %v; want %+v", got, err, own)
	}

	// An empty list would leave the closed bridges open: it means the default too.
	if got, _ := (Config{ProxyPort: 1, ClosedPrefixes: []string{}}).withDefaults(); !reflect.DeepEqual(got.ClosedPrefixes, want.ClosedPrefixes) {
		t.Errorf("an empty ClosedPrefixes became %q, want the default %q", got.ClosedPrefixes, want.ClosedPrefixes)
	}
}

func TestInvalidConfigsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		says string
	}{
		{"no proxy port", Config{}, "ProxyPort is required"},
		{"proxy prefix outside the bridges", Config{ProxyPort: 1, ProxyPrefix: "br-"}, "must start with BridgePrefix"},
		{"bridge prefix too long", Config{ProxyPort: 1, BridgePrefix: strings.Repeat("d", 16), ProxyPrefix: strings.Repeat("d", 16)}, "longer than an interface name"},
		{"a pattern, not a prefix", Config{ProxyPort: 1, BridgePrefix: "ds*", ProxyPrefix: "ds*i"}, "not a pattern"},
		{"slash in a prefix", Config{ProxyPort: 1, ProxyPrefix: "ds/"}, "ProxyPrefix"},
		{"table name too long", Config{ProxyPort: 1, Table: strings.Repeat("t", 256)}, "Table"},
		{"negative namespace fd", Config{ProxyPort: 1, NetNSFd: -1}, "NetNSFd"},
		{"closed prefix outside the bridges", Config{ProxyPort: 1, ClosedPrefixes: []string{"dsn-", "eth"}}, "ClosedPrefixes[1] \"eth\" must start with BridgePrefix"},
		{"empty closed prefix", Config{ProxyPort: 1, ClosedPrefixes: []string{""}}, "ClosedPrefixes[0] is empty"},
		{"a pattern as closed prefix", Config{ProxyPort: 1, ClosedPrefixes: []string{"dsn-*"}}, "not a pattern"},
		{"closed prefix too long", Config{ProxyPort: 1, ClosedPrefixes: []string{"ds" + strings.Repeat("n", 14)}}, "ClosedPrefixes[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an error saying %q", err, tc.says)
			}
			if _, err := Rules(tc.cfg); err == nil {
				t.Error("Rules accepted the config")
			}
			if _, err := ForwardRules(tc.cfg); err == nil {
				t.Error("ForwardRules accepted the config")
			}
			// A fake kernel, so that a validation that let the config through could never touch the host.
			k := &kernel{}
			if err := install(tc.cfg, k.dial()); err == nil || !strings.Contains(err.Error(), tc.says) || k.sends != nil {
				t.Errorf("install: got %v after %d sends, want the config refused before any netlink call", err, len(k.sends))
			}
		})
	}
}

func TestLongestValidPrefixesAreAccepted(t *testing.T) {
	p := strings.Repeat("d", 15)
	if _, err := (Config{ProxyPort: 1, BridgePrefix: p, ProxyPrefix: p, ClosedPrefixes: []string{p}}).withDefaults(); err != nil {
		t.Fatal(err)
	}
}
