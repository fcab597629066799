package dockerdriver

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
)

// Under gVisor a command's processes are not the host's: what finds or signals them by host PID is refused
// with a reason that names the runtime, and an exec's end leaves what it started alone.
func TestGVisorProcessesAreNotTheHosts(t *testing.T) {
	g := NewWithT(t)
	for _, rt := range []string{"", "runc", "io.containerd.runc.v2", "crun"} {
		g.Expect(hostPIDs(rt)).To(BeTrue(), rt)
	}
	g.Expect(hostPIDs("runsc")).To(BeFalse())

	refusal := refusedUnderGVisor("prim", "runsc", "the command is refused")
	g.Expect(IsInvalidSpec(refusal)).To(BeTrue(), "the Execution fails as refused, leaving its Sandbox alone")
	g.Expect(refusal).To(MatchError(ContainSubstring(`the command is refused, under runsc (gVisor): see docs/security.md`)))

	s := &session{name: "prim", runtime: "runsc", pid: 1}
	g.Expect(s.signal(context.Background(), nil, 2)).To(MatchError(ContainSubstring("signals are not relayed")))
	ended, err := s.end(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ended).To(BeZero(), "no host process is signalled for a gVisor exec, whatever its PID")
}

// A container under runsc is given room in its host pids limit for gVisor's own threads, so that a Sandbox's
// limit still counts its own processes; runc's is the Sandbox's limit itself.
func TestGVisorPidsRoom(t *testing.T) {
	g := NewWithT(t)
	s := validSpec()
	s.Resources.PIDs = 32
	_, host, _ := createRequest("n", s, "")
	g.Expect(*host.PidsLimit).To(Equal(int64(32)))
	s.Runtime = "runsc"
	g.Expect(s.Validate()).To(Succeed(), "a small limit is no reason to refuse: the room is added")
	_, host, _ = createRequest("n", s, "")
	g.Expect(*host.PidsLimit).To(Equal(int64(2*32 + gVisorThreadRoom)))
}
