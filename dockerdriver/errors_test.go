package dockerdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
	. "github.com/onsi/gomega"
)

func TestErrorMessageAndPredicates(t *testing.T) {
	g := NewWithT(t)
	err := fmt.Errorf("wrapped: %w", NewError(KindConflict, PhaseCreate, "c1", "name taken"))
	g.Expect(err.Error()).To(Equal("wrapped: create c1: Conflict: name taken"))
	g.Expect(IsConflict(err)).To(BeTrue())
	g.Expect(IsNotFound(err)).To(BeFalse())
	g.Expect(PhaseOf(err)).To(Equal(PhaseCreate))
	g.Expect(KindOf(errors.New("foreign"))).To(BeEmpty())
	g.Expect(PhaseOf(nil)).To(BeEmpty())
}

func TestClassifyKeepsDockerTextOutOfTheMessageAndSortsByKind(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithHost("unix:///run/test.sock"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	d := &Docker{cli: cli, node: "n"}
	secret := "TOKEN=hunter2"
	cases := map[string]struct {
		in   error
		kind Kind
	}{
		"not found":   {fmt.Errorf("%w: no such container (%s)", cerrdefs.ErrNotFound, secret), KindNotFound},
		"conflict":    {fmt.Errorf("%w: name in use (%s)", cerrdefs.ErrConflict, secret), KindConflict},
		"forbidden":   {fmt.Errorf("%w: pool overlaps (%s)", cerrdefs.ErrPermissionDenied, secret), KindConflict},
		"invalid":     {fmt.Errorf("%w: exec failed (%s)", cerrdefs.ErrInvalidArgument, secret), KindInvalidSpec},
		"server":      {fmt.Errorf("%w: boom (%s)", cerrdefs.ErrInternal, secret), KindUncertain},
		"ctx expired": {fmt.Errorf("%w (%s)", context.DeadlineExceeded, secret), KindUncertain},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got := d.classify(c.in, PhaseStart, "c1")
			g.Expect(KindOf(got)).To(Equal(c.kind))
			g.Expect(PhaseOf(got)).To(Equal(PhaseStart))
			g.Expect(got.Error()).NotTo(ContainSubstring("hunter2"))
			g.Expect(errors.Unwrap(got)).To(BeNil(), "Docker's error must not be reachable through the chain")
			if c.kind == KindUncertain {
				g.Expect(DockerText(fmt.Errorf("wrapped: %w", got))).To(Equal(c.in.Error()), "the one clue to an unknown outcome is kept apart")
			} else {
				g.Expect(DockerText(got)).To(BeEmpty())
			}
		})
	}
	NewWithT(t).Expect(d.classify(nil, PhaseStart, "c1")).To(Succeed())
}

func TestUnreachableOnlyWhenNothingWasSent(t *testing.T) {
	g := NewWithT(t)
	cli, err := client.NewClientWithOpts(client.WithHost("unix:///nonexistent.sock"))
	g.Expect(err).NotTo(HaveOccurred())
	d := &Docker{cli: cli, node: "n"}

	// A real failed dial, through the SDK.
	_, pingErr := cli.Ping(context.Background())
	g.Expect(isUnreachable(pingErr)).To(BeTrue(), "%v", pingErr)
	got := d.classify(pingErr, PhaseConnect, "")
	g.Expect(IsUnavailable(got)).To(BeTrue())
	g.Expect(got.Error()).To(ContainSubstring("Docker is not reachable at unix:///nonexistent.sock: start the daemon or set DOCKER_HOST"))

	// A connection that broke mid-call is not "unreachable": the call may have happened.
	midCall := &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: errors.New("connection reset")}}
	g.Expect(isUnreachable(midCall)).To(BeFalse())
}

func TestEnvVarNeverPrintsItsValue(t *testing.T) {
	g := NewWithT(t)
	spec := ContainerSpec{Env: []EnvVar{{Name: "TOKEN", Value: "hunter2"}}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		g.Expect(fmt.Sprintf(format, spec)).NotTo(ContainSubstring("hunter2"), format)
	}
	g.Expect(fmt.Sprint(spec.Env[0].MarshalLog())).To(Equal("TOKEN=<redacted>"))
}
