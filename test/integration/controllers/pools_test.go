//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

var _ = Describe("Warm pools and claims", func() {
	It("keeps a pool filled, hands a warm Sandbox to a claim with its env, and refills", func() {
		ns, a := newNamespace(), newAgent()
		envSeen := echoEnv(a.docker)
		create(template(ns, "py", "v1"))
		pool := warmPool(ns, "py", "py", 2)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))
		Expect(poolSandboxes(ns, "py")).To(ConsistOf("py-0", "py-1"))
		Expect(get(&dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "py-0"}}).Spec.ActiveDeadlineSeconds).
			To(BeNil(), "a warm Sandbox's deadline counts from its claim")

		claim := sandboxClaim(ns, "task", "py")
		claim.Spec.Env = []dsv1alpha1.ExecutionEnvVar{{Name: "TASK_ID", Value: "42"}}
		claim.Spec.Labels = map[string]string{"team": "a"}
		create(claim)
		Eventually(claimState(claim)).Should(Equal("True/Claimed Warm"))
		sbx := claimed(claim)
		Expect(sbx.Name).To(HavePrefix("py-"))
		Expect(sbx.Labels).To(HaveKeyWithValue(dsv1alpha1.LabelClaim, "task"))
		Expect(sbx.Labels).To(HaveKeyWithValue("team", "a"))
		Expect(metav1.GetControllerOf(sbx).Kind).To(Equal("SandboxClaim"))
		Expect(sbx.Spec.CommandEnv).To(Equal(claim.Spec.Env))
		Expect(*sbx.Spec.ActiveDeadlineSeconds).To(BeNumerically(">=", 600), "the template's deadline, counted from the claim")
		Expect(sbx.Status.TopologyGeneration).To(BeEquivalentTo(1), "the claim did not restart it")

		By("an Execution in the claimed Sandbox sees the claim's env")
		ex := &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "env"},
			Spec: dsv1alpha1.ExecutionSpec{SandboxName: sbx.Name, Command: []string{"env"}}}
		create(ex)
		Eventually(envSeen).Should(ContainElement("TASK_ID=42"))

		By("the pool refills what the claim took")
		// The pool's status may still count the claimed member as warm for the length of one write, before
		// the refill exists: the count of its Sandboxes settles after it.
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))
		Eventually(func() []string { return poolSandboxes(ns, "py") }).Should(HaveLen(3), "two warm and the claimed one")
		Eventually(claimState(claim)).Should(Equal("True/Claimed Warm"))
	})

	It("gives a claim a cold start when the pool has none, and says so", func() {
		ns, _ := newNamespace(), newAgent()
		create(template(ns, "py", "v1"))
		create(warmPool(ns, "empty", "py", 0))
		claim := sandboxClaim(ns, "cold", "empty")
		create(claim)
		Eventually(claimState(claim)).Should(Equal("True/Claimed Cold"))
		sbx := claimed(claim)
		Expect(sbx.Name).To(Equal("cold"), "a cold start is named after its claim")
		Expect(sbx.Labels).NotTo(HaveKey(dsv1alpha1.LabelPool))
	})

	It("refuses a claim that sets what the template does not let it", func() {
		ns, _ := newNamespace(), newAgent()
		tpl := template(ns, "strict", "v1")
		tpl.Spec.ClaimOverrides = []dsv1alpha1.ClaimOverride{dsv1alpha1.OverrideLabels}
		create(tpl)
		create(warmPool(ns, "strict", "strict", 1))
		claim := sandboxClaim(ns, "env", "strict")
		claim.Spec.Env = []dsv1alpha1.ExecutionEnvVar{{Name: "X", Value: "1"}}
		create(claim)
		Eventually(claimState(claim)).Should(Equal("False/OverrideNotAllowed "))
		Expect(claimCondition(claim, dsv1alpha1.ConditionStalled)()).To(Equal("True"))
	})

	It("gives the last warm Sandbox to exactly one of two claims racing for it", func() {
		ns, _ := newNamespace(), newAgent()
		create(template(ns, "py", "v1"))
		pool := warmPool(ns, "one", "py", 1)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("1/1/1 Filled"))

		claims := []*dsv1alpha1.SandboxClaim{sandboxClaim(ns, "left", "one"), sandboxClaim(ns, "right", "one")}
		var wg sync.WaitGroup
		for _, c := range claims {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				Expect(k8s.Create(context.Background(), c)).To(Succeed())
			}()
		}
		wg.Wait()
		for _, c := range claims {
			Eventually(claimCondition(c, dsv1alpha1.ConditionReady)).Should(Equal("True"))
		}
		left, right := claimed(claims[0]), claimed(claims[1])
		Expect(left.Name).NotTo(Equal(right.Name))
		Expect(left.Labels[dsv1alpha1.LabelClaim]).To(Equal("left"))
		Expect(right.Labels[dsv1alpha1.LabelClaim]).To(Equal("right"))
		var list dsv1alpha1.SandboxList
		Expect(k8s.List(context.Background(), &list, client.InNamespace(ns), client.HasLabels{dsv1alpha1.LabelClaim})).To(Succeed())
		Expect(list.Items).To(HaveLen(2), "one Sandbox per claim, none bound twice")
	})

	It("binds each of three warm Sandboxes once when six claims race for them, the rest warm from refills or cold", func() {
		ns, _ := newNamespace(), newAgent()
		create(template(ns, "py", "v1"))
		pool := warmPool(ns, "three", "py", 3)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("3/3/3 Filled"))
		warmBefore := poolSandboxes(ns, "three")

		claims := make([]*dsv1alpha1.SandboxClaim, 6)
		var wg sync.WaitGroup
		for i := range claims {
			claims[i] = sandboxClaim(ns, fmt.Sprintf("race-%d", i), "three")
			wg.Go(func() {
				defer GinkgoRecover()
				Expect(k8s.Create(context.Background(), claims[i])).To(Succeed())
			})
		}
		wg.Wait()
		holder := map[string]string{} // Sandbox → the claim that holds it
		for _, c := range claims {
			Eventually(claimCondition(c, dsv1alpha1.ConditionReady)).Should(Equal("True"))
			sbx := claimed(c)
			Expect(holder).NotTo(HaveKey(sbx.Name), "a Sandbox bound to two claims")
			holder[sbx.Name] = c.Name
			Expect(sbx.Labels[dsv1alpha1.LabelClaim]).To(Equal(c.Name))
			got := &dsv1alpha1.SandboxClaim{}
			Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(c), got)).To(Succeed())
			if got.Status.Start == dsv1alpha1.ClaimCold {
				Expect(sbx.Name).To(Equal(c.Name), "a cold start is named after its claim")
			} else {
				Expect(sbx.Name).To(HavePrefix("three-"), "a warm claim holds a member of its pool")
			}
		}
		warmTaken := 0
		for _, name := range warmBefore {
			if _, ok := holder[name]; ok {
				warmTaken++
			}
		}
		Expect(warmTaken).To(Equal(len(warmBefore)), "a claim went cold while a warm Sandbox was left")
		var list dsv1alpha1.SandboxList
		Expect(k8s.List(context.Background(), &list, client.InNamespace(ns), client.HasLabels{dsv1alpha1.LabelClaim})).To(Succeed())
		Expect(list.Items).To(HaveLen(len(claims)), "one Sandbox per claim, none bound twice, none left over")
	})

	It("rolls its warm Sandboxes when the template changes", func() {
		ns, _ := newNamespace(), newAgent()
		tpl := template(ns, "py", "v1")
		create(tpl)
		pool := warmPool(ns, "roll", "py", 2)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))
		before := poolHash(pool)

		Eventually(func() error {
			cur := &dsv1alpha1.SandboxTemplate{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(tpl), cur); err != nil {
				return err
			}
			cur.Spec.Sandbox.Env = []dsv1alpha1.EnvVar{{Name: "VERSION", Value: "v2"}}
			return k8s.Update(context.Background(), cur)
		}).Should(Succeed())
		Eventually(poolHash(pool)).ShouldNot(Equal(before))
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))
		Eventually(func() []string {
			var out []string
			for _, s := range poolMembers(ns, "roll") {
				out = append(out, s.Spec.Env[0].Value)
			}
			return out
		}).Should(Equal([]string{"v2", "v2"}))
	})

	It("deletes its warm Sandboxes when it goes, and leaves the claimed ones to their claims", func() {
		ns, a := newNamespace(), newAgent()
		create(template(ns, "py", "v1"))
		pool := warmPool(ns, "gone", "py", 2)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))
		claim := sandboxClaim(ns, "keep", "gone")
		create(claim)
		Eventually(claimState(claim)).Should(Equal("True/Claimed Warm"))
		held := claimed(claim)

		Expect(k8s.Delete(context.Background(), pool)).To(Succeed())
		Eventually(func() []string {
			var out []string
			for _, s := range poolMembers(ns, "gone") {
				out = append(out, s.Name)
			}
			return out
		}).Should(BeEmpty())
		Consistently(phase(held)).Should(Equal(dsv1alpha1.SandboxRunning))

		Expect(k8s.Delete(context.Background(), claim)).To(Succeed())
		Eventually(gone(held)).Should(BeTrue())
		Eventually(func() []dd.ContainerInfo {
			list, err := a.docker.ListContainers(context.Background(), map[string]string{dsv1alpha1.LabelNamespace: ns})
			Expect(err).NotTo(HaveOccurred())
			return list
		}).Should(BeEmpty())
	})

	It("keeps replicas on each node with scope Node, each made bound there by its own agent", func() {
		ns, a, b := newNamespace(), newAgent(), newAgent()
		create(template(ns, "py", "v1"))
		pool := warmPool(ns, "each", "py", 2)
		pool.Spec.Scope = dsv1alpha1.PoolNode
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("4/4/4 Filled"))
		Expect(membersByNode(ns, "each")).To(Equal(map[string]int{a.node: 2, b.node: 2}))

		By("a claim takes one, and its node refills")
		claim := sandboxClaim(ns, "task", "each")
		create(claim)
		Eventually(claimState(claim)).Should(Equal("True/Claimed Warm"))
		Eventually(func() map[string]int { return membersByNode(ns, "each") }).Should(Equal(map[string]int{a.node: 2, b.node: 2}))
		Eventually(poolCounts(pool)).Should(Equal("4/4/4 Filled"))

		By("a smaller pool gives up members on each node")
		Eventually(func() error {
			cur := &dsv1alpha1.SandboxWarmPool{}
			if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pool), cur); err != nil {
				return err
			}
			cur.Spec.Replicas = 1
			return k8s.Update(context.Background(), cur)
		}).Should(Succeed())
		Eventually(func() map[string]int { return membersByNode(ns, "each") }).Should(Equal(map[string]int{a.node: 1, b.node: 1}))
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))

		By("deleting it removes its warm Sandboxes from both nodes and leaves the claimed one")
		Expect(k8s.Delete(context.Background(), pool)).To(Succeed())
		Eventually(func() map[string]int { return membersByNode(ns, "each") }).Should(BeEmpty())
		Consistently(phase(claimed(claim))).Should(Equal(dsv1alpha1.SandboxRunning))
	})

	It("gives up its warm Sandboxes while another Sandbox waits for room", func() {
		ns, _ := newNamespace(), newAgent(func(o *agent.Options) { o.Capacity = 2 })
		create(template(ns, "py", "v1"))
		pool := warmPool(ns, "full", "py", 2)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("2/2/2 Filled"))

		waiting := sandbox(ns, "needs-room", "")
		create(waiting)
		Eventually(phase(waiting)).Should(Equal(dsv1alpha1.SandboxRunning))
		// The pool's refill then waits for room in its turn: one warm Sandbox, one starting.
		Eventually(poolCounts(pool)).Should(MatchRegexp(`^[12]/1/1 `))
		Consistently(phase(waiting)).Should(Equal(dsv1alpha1.SandboxRunning))
	})
})

// template is a SandboxTemplate of a busybox session with a 10-minute deadline; version goes in its env.
func template(ns, name, version string) *dsv1alpha1.SandboxTemplate {
	return &dsv1alpha1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: dsv1alpha1.SandboxTemplateSpec{Sandbox: dsv1alpha1.SandboxSpec{
			Image: busybox, Env: []dsv1alpha1.EnvVar{{Name: "VERSION", Value: version}},
			ActiveDeadlineSeconds: ptr.To(int64(600)),
		}},
	}
}

func warmPool(ns, name, tpl string, replicas int32) *dsv1alpha1.SandboxWarmPool {
	return &dsv1alpha1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxWarmPoolSpec{TemplateRef: dsv1alpha1.LocalObjectReference{Name: tpl}, Replicas: replicas},
	}
}

func sandboxClaim(ns, name, pool string) *dsv1alpha1.SandboxClaim {
	return &dsv1alpha1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       dsv1alpha1.SandboxClaimSpec{PoolRef: dsv1alpha1.LocalObjectReference{Name: pool}},
	}
}

// poolCounts polls a pool's status as "replicas/ready/available reason", when it is of the pool's generation.
func poolCounts(pool *dsv1alpha1.SandboxWarmPool) func() string {
	return func() string {
		cur := &dsv1alpha1.SandboxWarmPool{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pool), cur); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, dsv1alpha1.ConditionReady)
		if c == nil || cur.Status.ObservedGeneration != cur.Generation {
			return "not observed"
		}
		return fmt.Sprintf("%d/%d/%d %s", cur.Status.Replicas, cur.Status.ReadyReplicas, cur.Status.AvailableReplicas, c.Reason)
	}
}

func poolHash(pool *dsv1alpha1.SandboxWarmPool) func() string {
	return func() string {
		cur := &dsv1alpha1.SandboxWarmPool{}
		Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(pool), cur)).To(Succeed())
		return cur.Status.TemplateHash
	}
}

// poolSandboxes names every Sandbox the pool made, claimed or not.
func poolSandboxes(ns, pool string) []string {
	GinkgoHelper()
	var list dsv1alpha1.SandboxList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{dsv1alpha1.LabelPool: pool})).To(Succeed())
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Name)
	}
	return out
}

// poolMembers is the pool's warm Sandboxes not being deleted.
func poolMembers(ns, pool string) []dsv1alpha1.Sandbox {
	GinkgoHelper()
	var list dsv1alpha1.SandboxList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{dsv1alpha1.LabelPool: pool})).To(Succeed())
	var out []dsv1alpha1.Sandbox
	for _, s := range list.Items {
		if s.Labels[dsv1alpha1.LabelClaim] == "" && s.DeletionTimestamp.IsZero() {
			out = append(out, s)
		}
	}
	return out
}

// membersByNode counts the pool's warm Sandboxes by the node they are bound to.
func membersByNode(ns, pool string) map[string]int {
	GinkgoHelper()
	out := map[string]int{}
	for _, s := range poolMembers(ns, pool) {
		out[s.Spec.NodeName]++
	}
	return out
}

// claimState polls a claim as "Ready status/reason start".
func claimState(claim *dsv1alpha1.SandboxClaim) func() string {
	return func() string {
		cur := &dsv1alpha1.SandboxClaim{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(claim), cur); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, dsv1alpha1.ConditionReady)
		if c == nil {
			return "absent"
		}
		return string(c.Status) + "/" + c.Reason + " " + string(cur.Status.Start)
	}
}

func claimCondition(claim *dsv1alpha1.SandboxClaim, typ string) func() string {
	return func() string {
		cur := &dsv1alpha1.SandboxClaim{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(claim), cur); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(cur.Status.Conditions, typ); c != nil {
			return string(c.Status)
		}
		return "absent"
	}
}

// claimed is the Sandbox the claim's status names.
func claimed(claim *dsv1alpha1.SandboxClaim) *dsv1alpha1.Sandbox {
	GinkgoHelper()
	cur := &dsv1alpha1.SandboxClaim{}
	Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(claim), cur)).To(Succeed())
	Expect(cur.Status.SandboxName).NotTo(BeEmpty())
	return get(&dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: cur.Status.SandboxName}})
}

// echoEnv makes the fake's execs record the env they were given, as NAME=value.
func echoEnv(d *fake.Driver) func() []string {
	var mu sync.Mutex
	var seen []string
	d.SetExecHandler(func(_ context.Context, _ string, req dd.ExecRequest) fake.ExecOutput {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range req.Env {
			seen = append(seen, e.Name+"="+e.Value)
		}
		return fake.ExecOutput{Stdout: []byte(strings.Join(seen, "\n"))}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}
