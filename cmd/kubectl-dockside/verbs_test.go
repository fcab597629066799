package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args, pos []string
		ns        string
	}{
		{args: []string{"box"}, pos: []string{"box"}},
		{args: []string{"-n", "team", "box", "snap"}, pos: []string{"box", "snap"}, ns: "team"},
		{args: []string{"box", "-n", "team", "snap"}, pos: []string{"box", "snap"}, ns: "team"},
		{args: []string{"box", "snap", "--namespace=team"}, pos: []string{"box", "snap"}, ns: "team"},
		{args: []string{"-", "box:/x"}, pos: []string{"-", "box:/x"}},
		{args: []string{"-n", "team", "--", "-odd", "box:/x"}, pos: []string{"-odd", "box:/x"}, ns: "team"},
	} {
		g := NewWithT(t)
		k := &kubeFlags{}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		k.add(fs)
		pos, err := parseInterspersed(fs, tc.args)
		g.Expect(err).NotTo(HaveOccurred(), "%v", tc.args)
		g.Expect(pos).To(Equal(tc.pos), "%v", tc.args)
		g.Expect(k.namespace).To(Equal(tc.ns), "%v", tc.args)
	}
}

// TestVerbUsage: every verb answers -h with its usage and exit code 0, and a wrong number of arguments or
// an unknown flag with exit code 2, before it talks to any API server.
func TestVerbUsage(t *testing.T) {
	g := NewWithT(t)
	for name, v := range verbs() {
		g.Expect(v.usage).To(HavePrefix("Usage: kubectl dockside "+name), name)
		g.Expect(v.usage).To(ContainSubstring("Exit codes:"), name)
		g.Expect(runVerb(name, v, []string{"-h"})).To(Equal(0), name)
		g.Expect(runVerb(name, v, []string{"--no-such-flag", "x"})).To(Equal(exitUsage), name)
		tooMany := make([]string, v.maxArgs+1)
		for i := range tooMany {
			tooMany[i] = fmt.Sprintf("a%d", i)
		}
		g.Expect(runVerb(name, v, tooMany)).To(Equal(exitUsage), name)
		g.Expect(runVerb(name, v, nil)).To(Equal(exitUsage), name)
	}
}

func TestExitCodes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(exitCode("x", nil)).To(Equal(0))
	g.Expect(exitCode("x", errors.New("refused"))).To(Equal(exitFailed))
	g.Expect(exitCode("x", usageError("bad"))).To(Equal(exitUsage))
	g.Expect(exitCode("x", &exitError{code: exitTooLarge, err: errors.New("big")})).To(Equal(exitTooLarge))
	g.Expect(exitCode("x", timedOut(context.DeadlineExceeded, "it", "state"))).To(Equal(exitTimeout))
	g.Expect(exitCode("x", context.Canceled)).To(Equal(exitInterrupt))
}

func TestParseCopy(t *testing.T) {
	g := NewWithT(t)
	r, err := parseCopy("box:/workspace/a.bin", "./a.bin")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).To(Equal(copyRequest{sandbox: "box", remote: "/workspace/a.bin", local: "./a.bin"}))
	r, err = parseCopy("-", "box:notes.txt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).To(Equal(copyRequest{in: true, sandbox: "box", remote: "notes.txt", local: "-"}))
	r, err = parseCopy("./a:b", "my-box:/w/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.in).To(BeTrue(), "./a:b is a local name with a colon")

	_, err = parseCopy("a:/x", "b:/y")
	g.Expect(exitCode("cp", err)).To(Equal(exitUsage))
	g.Expect(err).To(MatchError(ContainSubstring("one side must be local")))
	_, err = parseCopy("x", "/tmp/y")
	g.Expect(exitCode("cp", err)).To(Equal(exitUsage))
	_, err = parseCopy("Box:/x", "y")
	g.Expect(err).To(HaveOccurred(), "a Sandbox's name is a DNS label")
}

func TestRestoredSpec(t *testing.T) {
	g := NewWithT(t)
	ckpt := &dsv1alpha1.Checkpoint{ObjectMeta: metav1.ObjectMeta{Name: "snap"}, Spec: dsv1alpha1.CheckpointSpec{SandboxName: "src"}}
	src := &dsv1alpha1.Sandbox{Spec: dsv1alpha1.SandboxSpec{
		Image: "img:1", NodeName: "n1", Lifecycle: dsv1alpha1.LifecyclePaused, Services: []string{"db"},
	}}

	spec, err := restoredSpec(ckpt, src, true, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec.Image).To(Equal("img:1"))
	g.Expect(spec.Services).To(Equal([]string{"db"}))
	g.Expect(spec.RestoreFrom).To(Equal("snap"))
	g.Expect(spec.NodeName).To(BeEmpty(), "bound afresh, where the Checkpoint can be read")
	g.Expect(spec.Lifecycle).To(BeEmpty(), "running, whatever the source was")
	g.Expect(src.Spec.NodeName).To(Equal("n1"), "the source is left alone")

	spec, err = restoredSpec(ckpt, src, true, "img:2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec.Image).To(Equal("img:2"))

	_, err = restoredSpec(ckpt, &dsv1alpha1.Sandbox{}, false, "")
	g.Expect(exitCode("restore", err)).To(Equal(exitUsage))
	g.Expect(err).To(MatchError(ContainSubstring("give the new Sandbox's --image")))
	spec, err = restoredSpec(ckpt, &dsv1alpha1.Sandbox{}, false, "img:3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*spec).To(Equal(dsv1alpha1.SandboxSpec{Image: "img:3", RestoreFrom: "snap"}))
}

func TestLifecycleDone(t *testing.T) {
	g := NewWithT(t)
	at := func(gen int64, paused metav1.ConditionStatus, conds ...metav1.Condition) *dsv1alpha1.Sandbox {
		sbx := &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "box"}}
		sbx.Status.Conditions = append(conds, metav1.Condition{Type: dsv1alpha1.ConditionPaused, Status: paused, ObservedGeneration: gen})
		return sbx
	}
	done, err := lifecycleDone(at(1, metav1.ConditionTrue), 2, dsv1alpha1.LifecyclePaused)
	g.Expect(done, err).To(BeFalse(), "written for an older generation")
	done, err = lifecycleDone(at(2, metav1.ConditionTrue), 2, dsv1alpha1.LifecyclePaused)
	g.Expect(done, err).To(BeTrue())
	done, err = lifecycleDone(at(2, metav1.ConditionTrue), 2, dsv1alpha1.LifecycleRunning)
	g.Expect(done, err).To(BeFalse())
	done, err = lifecycleDone(at(3, metav1.ConditionFalse), 3, dsv1alpha1.LifecycleRunning)
	g.Expect(done, err).To(BeTrue())

	stalled := metav1.Condition{Type: dsv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "PrimaryExited", Message: "gone", ObservedGeneration: 2}
	_, err = lifecycleDone(at(2, metav1.ConditionFalse, stalled), 2, dsv1alpha1.LifecyclePaused)
	g.Expect(err).To(MatchError(ContainSubstring("cannot be Paused: PrimaryExited: gone")))
	g.Expect(strings.Contains(err.Error(), "box")).To(BeTrue())
}

func TestClaimSpec(t *testing.T) {
	g := NewWithT(t)
	spec, err := claimSpec("python", []string{"TASK_ID=42", "EMPTY=", "EQ=a=b"}, []string{"team=data"}, 600)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec.PoolRef.Name).To(Equal("python"))
	g.Expect(spec.Env).To(Equal([]dsv1alpha1.ExecutionEnvVar{{Name: "TASK_ID", Value: "42"}, {Name: "EMPTY"}, {Name: "EQ", Value: "a=b"}}))
	g.Expect(spec.Labels).To(Equal(map[string]string{"team": "data"}))
	g.Expect(*spec.ActiveDeadlineSeconds).To(Equal(int64(600)))

	spec, err = claimSpec("python", nil, nil, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(spec.ActiveDeadlineSeconds).To(BeNil(), "the template's deadline")
	g.Expect(spec.Labels).To(BeNil())
	for _, bad := range [][2][]string{{{"TASK_ID"}, nil}, {{"=x"}, nil}, {nil, {"team"}}} {
		_, err := claimSpec("python", bad[0], bad[1], 0)
		g.Expect(exitCode("claim", err)).To(Equal(exitUsage), "%v", bad)
	}
}
