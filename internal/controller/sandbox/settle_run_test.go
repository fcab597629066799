package sandbox

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

func TestOutputTail(t *testing.T) {
	g := NewWithT(t)
	for name, tc := range map[string]struct {
		in      dd.LogTail
		want    string
		wantCut int64
	}{
		"plain":                       {in: dd.LogTail{Data: []byte("ok\n")}, want: "ok\n"},
		"cut before":                  {in: dd.LogTail{Data: []byte("tail"), Cut: 10}, want: "tail", wantCut: 10},
		"starts inside a character":   {in: dd.LogTail{Data: []byte("\xa9x"), Cut: 1}, want: "x", wantCut: 2},
		"not UTF-8 inside":            {in: dd.LogTail{Data: []byte("a\xffb")}, want: "a\uFFFDb"},
		"continuation bytes run long": {in: dd.LogTail{Data: []byte("\x80\x80\x80\x80z")}, want: "\uFFFDz", wantCut: 3},
	} {
		got, cut := outputTail(tc.in)
		g.Expect(got).To(Equal(tc.want), name)
		g.Expect(cut).To(Equal(tc.wantCut), name)
	}
}

func TestRunReason(t *testing.T) {
	g := NewWithT(t)
	start := time.Now().Add(-time.Minute)
	s := &scope{sbx: &dsv1alpha1.Sandbox{Spec: dsv1alpha1.SandboxSpec{Command: []string{"x"}, ActiveDeadlineSeconds: ptr.To[int64](10)}}}
	for name, tc := range map[string]struct {
		c    dd.ContainerInfo
		want string
	}{
		"zero":         {c: dd.ContainerInfo{StartedAt: start, FinishedAt: start.Add(time.Second)}, want: dsv1alpha1.ReasonCompleted},
		"non-zero":     {c: dd.ContainerInfo{StartedAt: start, FinishedAt: start.Add(time.Second), ExitCode: 2}, want: dsv1alpha1.ReasonError},
		"oom":          {c: dd.ContainerInfo{StartedAt: start, FinishedAt: start.Add(time.Second), ExitCode: 137, OOMKilled: true}, want: dsv1alpha1.ReasonOOMKilled},
		"past the end": {c: dd.ContainerInfo{StartedAt: start, FinishedAt: start.Add(10 * time.Second), ExitCode: 137}, want: dsv1alpha1.ReasonDeadlineExceeded},
	} {
		g.Expect(runReason(s, tc.c)).To(Equal(tc.want), name)
	}
	g.Expect(describeRun(&dsv1alpha1.RunResult{Reason: dsv1alpha1.ReasonError, ExitCode: ptr.To[int32](2)})).To(ContainSubstring("code 2"))
	g.Expect(strings.Contains(describeRun(&dsv1alpha1.RunResult{Reason: dsv1alpha1.ReasonLost}), "unknown")).To(BeTrue())
}
