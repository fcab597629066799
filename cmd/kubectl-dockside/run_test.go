package main

import (
	"flag"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		sandbox   string
		command   []string
		namespace string
		stdin     bool
	}{
		{args: []string{"shell", "--", "ls", "-l"}, sandbox: "shell", command: []string{"ls", "-l"}},
		{args: []string{"-n", "team", "-i", "py", "--", "python3", "-"}, sandbox: "py", command: []string{"python3", "-"}, namespace: "team", stdin: true},
		{args: []string{"py", "-n", "team", "--", "python3", "-c", "print(1)"}, sandbox: "py", command: []string{"python3", "-c", "print(1)"}, namespace: "team"},
		{args: []string{"shell", "ls", "-l"}, sandbox: "shell", command: []string{"ls", "-l"}},
		{args: []string{"shell", "--", "sh", "-n", "x"}, sandbox: "shell", command: []string{"sh", "-n", "x"}},
	} {
		g := NewWithT(t)
		o := &runOptions{env: envFlag{}}
		sandbox, command, err := parseArgs(runFlags(o), tc.args)
		g.Expect(err).NotTo(HaveOccurred(), "%v", tc.args)
		g.Expect(sandbox).To(Equal(tc.sandbox), "%v", tc.args)
		g.Expect(command).To(Equal(tc.command), "%v", tc.args)
		g.Expect(o.namespace).To(Equal(tc.namespace), "%v", tc.args)
		g.Expect(o.stdin).To(Equal(tc.stdin), "%v", tc.args)
	}

	g := NewWithT(t)
	_, _, err := parseArgs(runFlags(&runOptions{env: envFlag{}}), []string{"shell", "--"})
	g.Expect(err).To(MatchError(ContainSubstring("a command is required")))
	_, _, err = parseArgs(runFlags(&runOptions{env: envFlag{}}), nil)
	g.Expect(err).To(MatchError(ContainSubstring("a Sandbox name is required")))
	_, _, err = parseArgs(runFlags(&runOptions{env: envFlag{}}), []string{"-h"})
	g.Expect(err).To(MatchError(flag.ErrHelp))
	g.Expect(envFlag{}.Set("NOVALUE")).To(MatchError(ContainSubstring("NAME=VALUE")))
}
