package dockerdriver

import "github.com/docker/docker/api/types/container"

// maxOpenFiles bounds the open files of each process of a container (RLIMIT_NOFILE), soft and hard alike.
// 1024 is the soft limit most Linux programs are written for (and the most select() can watch); equal hard
// means a process cannot raise it, as raising a hard limit needs CAP_SYS_RESOURCE, which every container
// lacks. Left to the daemon, the limit is whatever dockerd's defaults are (20000 on the development host,
// 1048576 on many), and the 256 processes a Sandbox has by default could then open more files than the
// host's whole file table holds (fs.file-max, 2.4 million there); now a container holds at most
// pids × 1024.
const maxOpenFiles = 1024

// ulimits are set explicitly on every container instead of inheriting the daemon's defaults, which differ
// from host to host: no core dumps (soft and hard 0: the daemon's default left the hard limit unlimited,
// so a process could turn them back on; a piped core_pattern handler is told the limit is 0) and
// maxOpenFiles.
func ulimits() []*container.Ulimit {
	return []*container.Ulimit{
		{Name: "core", Soft: 0, Hard: 0},
		{Name: "nofile", Soft: maxOpenFiles, Hard: maxOpenFiles},
	}
}
