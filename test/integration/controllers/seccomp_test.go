//go:build integration

package controllers_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("A daemon without seccomp", func() {
	It("is refused at start-up unless the risk is accepted, and then runs Sandboxes", func() {
		node := newNode()
		docker := newDocker(node)
		docker.SetSeccomp(false)

		_, err := agent.New(context.Background(), cfg, agent.Options{Node: node, Driver: docker})
		Expect(err).To(MatchError(And(ContainSubstring("applies no seccomp profile"), ContainSubstring("--allow-no-seccomp"))))

		a := startAgent(node, docker, func(o *agent.Options) { o.AllowNoSeccomp = true })
		ns := newNamespace()
		sbx := sandbox(ns, "unfiltered", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})
})
