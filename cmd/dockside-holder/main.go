// Command dockside-holder is the whole of the holder image: it does nothing until it is asked to stop.
// Each Sandbox runs one holder with its workspace mounted, because a tmpfs-backed volume keeps its content only
// while some running container mounts it (docs/design/docker-mapping.md, "Why the holder exists"). As PID 1 it must
// handle SIGTERM itself, or the kernel would ignore the signal and every stop would wait out Docker's grace
// period.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
