package hostfirewall

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/google/nftables/expr"
)

// describe prints rules with the expressions' fields rather than their addresses, for failure messages.
func describe(rules [][]expr.Any) string {
	var b strings.Builder
	for i, exprs := range rules {
		fmt.Fprintf(&b, "\n  rule %d:", i+1)
		for _, e := range exprs {
			fmt.Fprintf(&b, " %T%+v", e, reflect.ValueOf(e).Elem().Interface())
		}
	}
	return b.String()
}
