package main

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPrintProcesses(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	four := 4
	procs := []remoteProcess{
		{ID: "job", Command: []string{"sh", "-c", "sleep 9"}, Background: true, Running: true, StartTime: metav1.NewTime(now.Add(-90 * time.Second))},
		{ID: "done", Command: []string{"false"}, Background: true, ExitCode: &four, StartTime: metav1.NewTime(now.Add(-3 * time.Hour))},
		{ID: "kubectl-ab12", Command: []string{"sh"}, Error: "the container stopped", StartTime: metav1.NewTime(now.Add(-5 * time.Second))},
	}
	var out strings.Builder
	g.Expect(printProcesses(&out, procs, now)).To(Succeed())
	g.Expect(strings.Split(out.String(), "\n")).To(Equal([]string{
		"ID            KIND        STATE      AGE  COMMAND",
		"job           background  Running    1m   sh -c sleep 9",
		"done          background  Exited(4)  3h   false",
		"kubectl-ab12  exec        Ended      5s   sh  (the container stopped)",
		"",
	}))
}
