// Package loopback finds ports on 127.0.0.1 for the tests: for a server of a test's own to listen on, or for
// a pull that must fail at once without the daemon ever reaching off this machine.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// FreeAddr is 127.0.0.1:port with a port that nothing listens on right now (it was free a moment ago).
func FreeAddr() (string, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), nil
}

// FreePorts are n different ports of 127.0.0.1 that nothing listens on right now: each is held until all are
// found, so that none comes twice.
func FreePorts(n int) (_ []int, err error) {
	var ports []int
	for range n {
		l, lerr := net.Listen("tcp", "127.0.0.1:0")
		if lerr != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", lerr)
		}
		defer func() {
			if cerr := l.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("freeing %s: %w", l.Addr(), cerr))
			}
		}()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
