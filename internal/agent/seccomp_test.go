package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// logLines is a logger that keeps what it is given, one line per call.
func logLines() (logr.Logger, *[]string) {
	var lines []string
	return funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{}), &lines
}

func TestCheckSeccomp(t *testing.T) {
	cases := map[string]struct {
		seccomp, allow bool
		refused        bool
		log            string // what the one log line says
	}{
		"on":                 {seccomp: true, log: `Docker applies a seccomp profile to every sandbox" "profile"="builtin"`},
		"on, risk accepted":  {seccomp: true, allow: true, log: `Docker applies a seccomp profile to every sandbox" "profile"="builtin"`},
		"off":                {refused: true},
		"off, risk accepted": {allow: true, log: `DANGER: Docker applies NO seccomp profile`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := fake.New("node-a")
			d.SetSeccomp(c.seccomp)
			log, lines := logLines()
			err := checkSeccomp(context.Background(), d, time.Second, c.allow, log)
			if c.refused {
				g.Expect(err).To(MatchError(And(ContainSubstring("applies no seccomp profile"), ContainSubstring("--allow-no-seccomp"), ContainSubstring("unconfined"))))
				g.Expect(*lines).To(BeEmpty(), "the refusal is the error, which the agent prints as it exits")
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(*lines).To(HaveLen(1))
			g.Expect((*lines)[0]).To(ContainSubstring(c.log))
		})
	}
}

func TestCheckSeccompWhenTheDaemonDoesNotAnswer(t *testing.T) {
	g := NewWithT(t)
	d := fake.New("node-a")
	d.SetUnavailable(true)
	log, _ := logLines()
	err := checkSeccomp(context.Background(), d, time.Second, true, log)
	g.Expect(dd.IsUnavailable(err)).To(BeTrue(), "accepting no seccomp is not accepting not knowing: %v", err)
}

// New refuses a daemon without seccomp before it builds anything, even before it talks to the API server
// (there is none here).
func TestNewRefusesADaemonWithoutSeccomp(t *testing.T) {
	g := NewWithT(t)
	d := fake.New("node-a")
	d.SetSeccomp(false)
	log, lines := logLines()
	_, err := New(ctrl.LoggerInto(context.Background(), log), nil, Options{Node: "node-a", Driver: d})
	g.Expect(err).To(MatchError(ContainSubstring("--allow-no-seccomp")))
	g.Expect(strings.Join(*lines, "\n")).NotTo(ContainSubstring("applies a seccomp profile"))
}
