package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// nodeLease is the lock on the node's Lease (docs/design/overview.md, "Agent restarts"). An agent that holds its
// node's host lock, a file lock under the checkpoint folder that the kernel lets go of when the process dies,
// is the only agent of that node on this host; it leads under an identity that is the same across its
// restarts, so that an agent restarted after a crash (SIGKILL, OOM) finds the Lease held by itself and takes
// it over at once instead of waiting for it to expire. Any other agent of the node gets an identity of its
// own and waits for the Lease as usual.
func nodeLease(cfg *rest.Config, opts Options, log logr.Logger) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	id := host + "_" + string(uuid.NewUUID())
	if held, err := hostLock(opts); err != nil {
		log.Info("No host lock for the node's agent; waiting for the Lease to expire after a crash", "reason", err.Error())
	} else if held {
		id = host + "_" + opts.Node
	}
	cfg = rest.CopyConfig(cfg)
	rest.AddUserAgent(cfg, "leader-election")
	cfg.Timeout = renewDeadline(opts) / 2 // one hung request must not cost the Lease
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, opts.LeaseNamespace, LeaseName(opts.Node),
		clients.CoreV1(), clients.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
}

// hostLock takes the node's host lock for the life of the process; false when another process holds it.
// The file stays open on purpose: closing it would let go of the lock.
func hostLock(opts Options) (bool, error) {
	if opts.CheckpointDir == "" {
		return false, fmt.Errorf("no --checkpoint-dir to keep the lock in")
	}
	if err := os.MkdirAll(opts.CheckpointDir, 0o700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(filepath.Join(opts.CheckpointDir, "."+opts.Node+".agent.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func renewDeadline(opts Options) time.Duration {
	if opts.RenewDeadline > 0 {
		return opts.RenewDeadline
	}
	return 10 * time.Second
}

func leaseDuration(opts Options) time.Duration {
	if opts.LeaseDuration > 0 {
		return opts.LeaseDuration
	}
	return 15 * time.Second // controller-runtime's default
}
