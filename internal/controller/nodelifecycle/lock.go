package nodelifecycle

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

// Lock is the lock on a node's Lease that its agent leads under.
type Lock struct {
	Node          string
	Namespace     string        // of the Lease
	HostLockDir   string        // keeps the node's host lock (the agent's checkpoint folder); "": no host lock
	RenewDeadline time.Duration // how long a renewal may take; 0 is controller-runtime's 10s
}

// NewLock is the lock on the node's Lease (docs/design/overview.md, "Agent restarts"). An agent that holds its
// node's host lock, a file lock under HostLockDir that the kernel lets go of when the process dies, is the
// only agent of that node on this host; it leads under an identity that is the same across its restarts, so
// that an agent restarted after a crash (SIGKILL, OOM) finds the Lease held by itself and takes it over at
// once instead of waiting for it to expire. Any other agent of the node gets an identity of its own and
// waits for the Lease as usual. The holder of the host lock also rides out API outages (patientLock);
// any other agent stands down when it cannot renew, as client-go's leader election has it.
func NewLock(cfg *rest.Config, l Lock, log logr.Logger) (resourcelock.Interface, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("naming the lock holder: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	held, err := l.hostLock()
	if err != nil {
		log.Info("No host lock for the node's agent; waiting for the Lease to expire after a crash", "reason", err.Error())
	} else if held {
		id = host + "_" + l.Node
	}
	cfg = rest.CopyConfig(cfg)
	rest.AddUserAgent(cfg, "leader-election")
	cfg.Timeout = l.renewDeadline() / 2 // one hung request must not cost the Lease
	cfg.RateLimiter = nil               // a bucket of its own: renewals never wait behind the reconcilers' writes
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("making the Lease client: %w", err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, l.Namespace, LeaseName(l.Node),
		clients.CoreV1(), clients.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return nil, fmt.Errorf("making the Lease lock: %w", err)
	}
	if held {
		return &patientLock{Interface: lock, log: log}, nil
	}
	return lock, nil
}

// hostLock takes the node's host lock for the life of the process; false when another process holds it.
// The file stays open on purpose: closing it would let go of the lock.
func (l Lock) hostLock() (bool, error) {
	if l.HostLockDir == "" {
		return false, fmt.Errorf("no --checkpoint-dir to keep the lock in")
	}
	if err := os.MkdirAll(l.HostLockDir, 0o700); err != nil {
		return false, fmt.Errorf("making the host lock's folder: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(l.HostLockDir, "."+l.Node+".agent.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, fmt.Errorf("opening the host lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return false, nil
		}
		return false, fmt.Errorf("taking the host lock: %w", err)
	}
	return true, nil
}

func (l Lock) renewDeadline() time.Duration {
	if l.RenewDeadline > 0 {
		return l.RenewDeadline
	}
	return 10 * time.Second
}
