// Package loopback finds addresses on 127.0.0.1 for the tests: for a server of a test's own to listen on, or
// for a pull that must fail at once without the daemon ever reaching off this machine.
package loopback

import (
	"fmt"
	"net"
)

// FreeAddr is 127.0.0.1:port with a port that nothing listens on right now (it was free a moment ago).
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return "", fmt.Errorf("freeing %s: %w", addr, err)
	}
	return addr, nil
}
