package egress

import (
	"fmt"
	"strings"
)

// nameProblem says why name (lowercase, without a trailing dot) is not a DNS host name, or "" when it is one.
// Labels are letters, digits, '-' and '_' (which real names use), and the last label may not be all digits,
// so that no spelling an address parser might read as IPv4 ("127.1", "010.0.0.1") passes as a name.
func nameProblem(name string) string {
	if name == "" {
		return "empty host"
	}
	if len(name) > 253 {
		return "longer than 253 characters"
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return "empty label"
		}
		if len(l) > 63 {
			return fmt.Sprintf("label %q is longer than 63 characters", l)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Sprintf("label %q starts or ends with '-'", l)
		}
		for _, c := range l {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' {
				return fmt.Sprintf("label %q holds %q (only a-z, 0-9, '-' and '_')", l, c)
			}
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "neither an IPv4 address nor a DNS name (the last label is all digits)"
	}
	return ""
}

// normalName is a host as a client may spell it, compared the way DNS does: case-insensitive, and the
// trailing dot of a fully qualified name ignored.
func normalName(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
