// Package architecture holds no code: its tests check the import rules between Dockside's packages, which
// keep Docker behind dockerdriver and keep the reconcilers from reaching into one another. The rules are a
// table in rules_test.go; `make lint` runs them, and so does plain `go test ./...`.
package architecture
