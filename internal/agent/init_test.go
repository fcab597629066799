package agent

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestNodeInit(t *testing.T) {
	g := NewWithT(t)
	d := fake.New("node-a")
	log, lines := logLines()
	on, err := nodeInit(context.Background(), d, time.Second, log)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(on).To(BeTrue())
	g.Expect(*lines).To(ConsistOf(ContainSubstring(`run under the Docker daemon's init, which reaps orphans" "initBinary"="docker-init"`)))

	d.SetInit(false)
	log, lines = logLines()
	on, err = nodeInit(context.Background(), d, time.Second, log)
	g.Expect(err).NotTo(HaveOccurred(), "the agent runs on without an init")
	g.Expect(on).To(BeFalse())
	g.Expect(*lines).To(ConsistOf(And(ContainSubstring("run without an init"), ContainSubstring(`could not run its init binary \"docker-init\"`))))

	d.SetUnavailable(true)
	_, err = nodeInit(context.Background(), d, time.Second, log)
	g.Expect(dd.IsUnavailable(err)).To(BeTrue(), "%v", err)
}
