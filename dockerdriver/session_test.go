package dockerdriver

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSessionOf(t *testing.T) {
	g := NewWithT(t)
	procs := map[int]proc{
		1:   {ppid: 0, sid: 1},     // the container's init
		100: {ppid: 1, sid: 100},   // the exec's leader
		101: {ppid: 100, sid: 100}, // its child
		102: {ppid: 101, sid: 102}, // a grandchild that called setsid: found through its parent
		103: {ppid: 1, sid: 100},   // reparented to init, still in the session
		200: {ppid: 1, sid: 200},   // another exec
		201: {ppid: 200, sid: 200},
	}
	g.Expect(sessionOf(procs, 100)).To(Equal(map[int]bool{100: true, 101: true, 102: true, 103: true}))
	g.Expect(sessionOf(procs, 999)).To(BeEmpty(), "a leader that is gone with nothing left")
}

// The agent reads its own /proc as it reads the host's: this process is there, with its parent and session.
func TestHostProcesses(t *testing.T) {
	g := NewWithT(t)
	procs, err := hostProcesses()
	g.Expect(err).NotTo(HaveOccurred())
	me, ok := procs[os.Getpid()]
	g.Expect(ok).To(BeTrue())
	g.Expect(me.ppid).To(Equal(os.Getppid()))
	sid, err := getsid()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(me.sid).To(Equal(sid))
}

func getsid() (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

// cgroupProcesses finds the processes whose cgroup names what it is given (here a line of this process's own),
// this one among them, and leaves zombies out: a child that exited and was not waited for.
func TestCgroupProcessesLeavesZombiesOut(t *testing.T) {
	g := NewWithT(t)
	own, err := os.ReadFile("/proc/self/cgroup")
	g.Expect(err).NotTo(HaveOccurred())
	line, _, _ := strings.Cut(string(own), "\n")
	child := exec.Command("true")
	g.Expect(child.Start()).To(Succeed())
	t.Cleanup(func() { _ = child.Wait() })
	zombie := func() string {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child.Process.Pid))
		return string(stat)
	}
	g.Eventually(zombie).Should(ContainSubstring(") Z "))
	live, err := cgroupProcesses(line)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(live).To(HaveKey(strconv.Itoa(os.Getpid())))
	g.Expect(live).NotTo(HaveKey(strconv.Itoa(child.Process.Pid)))
}
