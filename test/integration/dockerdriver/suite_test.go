//go:build integration

// Package dockerdriver_test checks the real driver against the real Docker daemon, using the locally built
// test image (hack/build-images.sh). Every test labels what it makes with this run's own node name, removes
// it by label, and the suite ends by asserting nothing with that node label is left.
package dockerdriver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/docker/docker/client"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/test/internal/dockercli"
)

const testImage = "dockside.dev/busybox:local"

var (
	node   string          // unique per run, so parallel suites never collide
	driver *dd.Docker      // the driver under test
	docker *client.Client  // a plain client, to inspect what Docker recorded
	suite  context.Context // lives for the whole suite
	stop   context.CancelFunc
)

func TestDockerDriver(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "dockerdriver against the real Docker daemon")
}

var _ = BeforeSuite(func() {
	suite, stop = context.WithCancel(context.Background())
	node = "itest-" + randomHex(4)
	var err error
	driver, err = dd.New(suite, dd.Options{Node: node})
	Expect(err).NotTo(HaveOccurred(), "the Docker daemon must be reachable (DOCKER_HOST)")
	docker, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	Expect(err).NotTo(HaveOccurred())
	img, err := driver.InspectImage(suite, testImage)
	Expect(err).NotTo(HaveOccurred())
	Expect(img.Exists).To(BeTrue(), testImage+" is missing: run bash hack/build-images.sh")
})

// The final check: every test removed what it made, so nothing labelled with this run's node is left.
// Leftovers are removed anyway so a failed run does not litter the daemon, but they fail the suite.
var _ = AfterSuite(func() {
	defer stop()
	left, err := dockercli.Leftovers(node)
	Expect(err).NotTo(HaveOccurred())
	Expect(dockercli.RemoveLabelled(node)).To(Succeed())
	Expect(left).To(BeEmpty(), "resources labelled %s=%s were left behind", dsv1alpha1.LabelNode, node)
	Expect(dockercli.Leftovers(node)).To(BeEmpty())
})

// newOwner makes a fresh owner for one test and registers the removal, through the driver and by label,
// of everything that owner gets: containers, then networks, then volumes, the agent's own cleanup order
// (docs/design/docker-mapping.md, "Deletion").
func newOwner(name string) dd.Owner {
	o := dd.Owner{Namespace: "itest", Name: name, UID: randomHex(8), Generation: 1}
	DeferCleanup(func(ctx SpecContext) {
		match := map[string]string{dsv1alpha1.LabelUID: o.UID}
		cs, err := driver.ListContainers(ctx, match)
		Expect(err).NotTo(HaveOccurred())
		for _, c := range cs {
			Expect(driver.RemoveContainer(ctx, c.Name)).To(Succeed())
		}
		ns, err := driver.ListNetworks(ctx, match)
		Expect(err).NotTo(HaveOccurred())
		for _, n := range ns {
			Expect(driver.RemoveNetwork(ctx, n.Name)).To(Succeed())
		}
		vs, err := driver.ListVolumes(ctx, match)
		Expect(err).NotTo(HaveOccurred())
		for _, v := range vs {
			Expect(driver.RemoveVolume(ctx, v.Name)).To(Succeed())
		}
	}, NodeTimeout(time.Minute))
	return o
}

// spec is a small long-running container of owner o in the test image.
func spec(o dd.Owner, role, service string, cmd ...string) dd.ContainerSpec {
	if len(cmd) == 0 {
		cmd = []string{"sleep", "3600"}
	}
	return dd.ContainerSpec{
		Name: dd.Name(o, role, service), Owner: o, Role: role, Service: service,
		Image: testImage, Cmd: cmd,
		Resources: dd.Resources{MemoryBytes: 64 << 20, NanoCPUs: 500_000_000, PIDs: 64},
	}
}

// run ensures and starts a container and returns its observation.
func run(ctx context.Context, s dd.ContainerSpec) dd.ContainerInfo {
	GinkgoHelper()
	_, err := driver.EnsureContainer(ctx, s)
	Expect(err).NotTo(HaveOccurred())
	Expect(driver.StartContainer(ctx, s.Name)).To(Succeed())
	info, err := driver.ObserveContainer(ctx, s.Name)
	Expect(err).NotTo(HaveOccurred())
	return info
}

// sh runs a shell command in a container through the driver and returns its result.
func sh(ctx context.Context, name, script string, timeout time.Duration) dd.ExecResult {
	GinkgoHelper()
	res, err := driver.Exec(ctx, name, dd.ExecRequest{
		Command: []string{"sh", "-c", script}, Timeout: timeout, OutputLimit: 64 << 10,
	})
	Expect(err).NotTo(HaveOccurred())
	return res
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
