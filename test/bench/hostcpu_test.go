package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of a process's times in /proc/<pid>/stat: USER_HZ, 100 on every Linux the agent runs on.
const userHZ = 100

// processCPU is the user and system time a process has spent, its threads' included, in seconds; -1 if it
// cannot be read.
func processCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name, second field, is in parentheses and may hold spaces: count fields after its end.
	end := strings.LastIndexByte(string(data), ')')
	if end < 0 {
		return -1
	}
	fields := strings.Fields(string(data)[end+1:]) // fields[0] is the state, field 3 of the file
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64) // field 14
	stime, err2 := strconv.ParseFloat(fields[12], 64) // field 15
	if err1 != nil || err2 != nil {
		return -1
	}
	return (utime + stime) / userHZ
}

// cgroupCPU is the CPU time charged to a container's cgroup (v1 or v2, cgroupfs or systemd driver), in
// seconds; -1 if it cannot be read.
func cgroupCPU(id string) float64 {
	if data, err := os.ReadFile("/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage"); err == nil {
		if ns, err := strconv.ParseFloat(strings.TrimSpace(string(data)), 64); err == nil {
			return ns / 1e9
		}
	}
	for _, path := range []string{"/sys/fs/cgroup/docker/" + id + "/cpu.stat", "/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if us, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
					return us / 1e6
				}
			}
		}
	}
	return -1
}
