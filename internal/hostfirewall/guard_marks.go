package hostfirewall

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// guardMarkPrefix begins the abstract Unix socket name each agent with a host firewall holds while it runs.
// Abstract socket names belong to a network namespace, like the table they stand for, and the kernel drops
// them when the process dies, however it dies: an agent lists them to learn whether another agent of the same
// namespace still guards the table before removing it. No file, no lock directory shared between containers.
const guardMarkPrefix = "@dockside-host-firewall/"

// guardMark is this agent's mark.
type guardMark struct {
	listener net.Listener
	name     string
}

func newGuardMark() (*guardMark, error) {
	name := guardMarkPrefix + string(uuid.NewUUID())
	l, err := net.Listen("unix", name)
	if err != nil {
		return nil, fmt.Errorf("holding the guard mark %s: %w", name, err)
	}
	return &guardMark{listener: l, name: name}, nil
}

func (g *guardMark) close() { g.listener.Close() }

// otherGuardMarks tells whether a mark other than a closed one is held in this network namespace.
func otherGuardMarks() (bool, error) {
	marks, err := guardMarks()
	return len(marks) > 0, err
}

// guardMarks lists the marks held in this network namespace, from /proc/net/unix, where an abstract name
// shows with '@' for its leading NUL as the last field of its line.
func guardMarks() ([]string, error) {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil, fmt.Errorf("listing the guard marks: %w", err)
	}
	defer f.Close()
	var marks []string
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if n := len(fields); n >= 8 && strings.HasPrefix(fields[n-1], guardMarkPrefix) {
			marks = append(marks, fields[n-1])
		}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("reading /proc/net/unix: %w", err)
	}
	return marks, nil
}
