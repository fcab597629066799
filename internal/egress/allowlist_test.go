package egress

import (
	"strings"
	"testing"
)

func TestParseAllowlistRejects(t *testing.T) {
	for entry, want := range map[string]string{
		"":                               "empty entry",
		"pypi.org:0":                     "port must be a number from 1 to 65535",
		"pypi.org:65536":                 "port must be a number from 1 to 65535",
		"pypi.org:08":                    "port must be a number from 1 to 65535",
		"pypi.org:+1":                    "port must be a number from 1 to 65535",
		"pypi.org:":                      "port must be a number from 1 to 65535",
		"pypi.org:https":                 "port must be a number from 1 to 65535",
		"::1":                            "IPv6 addresses are not supported",
		"[2001:db8::1]:443":              "IPv6 addresses are not supported",
		"PyPI.org":                       "lowercase",
		"pypi.org.":                      "trailing dot",
		"*":                              "wildcard is written only as a leading '*.'",
		"*pypi.org":                      "wildcard is written only as a leading '*.'",
		"a.*.org":                        "wildcard is written only as a leading '*.'",
		"*.":                             "after '*.': empty host",
		"*.*.org":                        "wildcard is written only as a leading '*.'",
		"*.10.0.0.1":                     "a wildcard takes a DNS name suffix, not an address",
		"pypi..org":                      "empty label",
		"-pypi.org":                      "starts or ends with '-'",
		"py pi.org":                      "holds ' '",
		"pypi.org/simple":                "without a scheme or a path",
		"http://pypi.org":                "without a scheme or a path",
		"127.1":                          "neither an IPv4 address nor a DNS name",
		"010.0.0.1":                      "neither an IPv4 address nor a DNS name",
		"256.1.1.1":                      "neither an IPv4 address nor a DNS name",
		strings.Repeat("a", 64) + ".org": "longer than 63 characters",
	} {
		_, err := ParseAllowlist([]string{"ok.example", entry})
		if err == nil {
			t.Errorf("ParseAllowlist(%q) accepted it", entry)
			continue
		}
		prefix := `network.allow[1] "` + entry + `": `
		if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAllowlist(%q) = %q, want %q and %q", entry, err, prefix, want)
		}
	}
}

func TestAllowlistPermits(t *testing.T) {
	a, err := ParseAllowlist([]string{"pypi.org", "files.pythonhosted.org:443", "*.github.com", "*.example.net:8443", "203.0.113.7:22", "198.51.100.1", "under_score.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"pypi.org", 443, true},
		{"pypi.org", 80, true}, // no port: any port
		{"PyPI.ORG", 443, true},
		{"pypi.org.", 443, true},
		{"www.pypi.org", 443, false}, // a name is not a wildcard
		{"files.pythonhosted.org", 443, true},
		{"files.pythonhosted.org", 80, false},
		{"api.github.com", 443, true},
		{"a.b.github.com", 22, true},
		{"API.GitHub.com.", 443, true},
		{"github.com", 443, false}, // *.suffix is not the suffix itself
		{"evilgithub.com", 443, false},
		{".github.com", 443, false},
		{"x.example.net", 8443, true},
		{"x.example.net", 443, false},
		{"203.0.113.7", 22, true},
		{"203.0.113.7", 443, false},
		{"::ffff:203.0.113.7", 22, true}, // the same address
		{"198.51.100.1", 1, true},
		{"198.51.100.2", 1, false},
		{"under_score.example", 80, true},
		{"evil.example", 443, false},
		{"", 443, false},
	} {
		if got := a.Permits(tc.host, tc.port); got != tc.want {
			t.Errorf("Permits(%q, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
}

func TestEmptyAllowlistPermitsAll(t *testing.T) {
	for _, entries := range [][]string{nil, {}} {
		a, err := ParseAllowlist(entries)
		if err != nil || !a.Empty() || !a.Permits("anything.example", 1) {
			t.Fatalf("ParseAllowlist(%v) = empty %v, err %v", entries, a.Empty(), err)
		}
	}
	if !(Allowlist{}).Permits("169.254.169.254", 80) {
		t.Fatal("the zero Allowlist leaves addresses to the Policy")
	}
	a, _ := ParseAllowlist([]string{"pypi.org"})
	if a.Empty() {
		t.Fatal("a list with an entry is not empty")
	}
}
