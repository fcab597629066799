// Package nftrules prints nftables rules for the failure messages of internal/hostfirewall's unit tests and of
// the suite that installs them in a network namespace (test/integration/hostfirewall).
package nftrules

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/nftables/expr"
)

// Describe prints rules with the expressions' fields rather than their addresses, one rule a line.
func Describe(rules [][]expr.Any) string {
	var b strings.Builder
	for i, exprs := range rules {
		fmt.Fprintf(&b, "\n  rule %d:", i+1)
		for _, e := range exprs {
			fmt.Fprintf(&b, " %T%+v", e, reflect.ValueOf(e).Elem().Interface())
		}
	}
	return b.String()
}
