package dockerdriver

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestSecurityInfoSeccomp(t *testing.T) {
	cases := map[string]struct {
		options []string
		profile string
		on      bool
	}{
		"Docker's builtin profile":   {[]string{"name=apparmor", "name=seccomp,profile=builtin", "name=cgroupns"}, "builtin", true},
		"20.10's default profile":    {[]string{"name=seccomp,profile=default"}, "default", true},
		"a custom profile":           {[]string{"name=seccomp,profile=/etc/docker/seccomp.json"}, "/etc/docker/seccomp.json", true},
		"a name without a profile":   {[]string{"name=seccomp"}, "", true},
		"unconfined by daemon flag":  {[]string{"name=apparmor", "name=seccomp,profile=unconfined"}, "unconfined", false},
		"no seccomp in the daemon":   {[]string{"name=apparmor", "name=rootless"}, "", false},
		"no security options at all": {nil, "", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			profile, on := SecurityInfo{Options: c.options}.Seccomp()
			g.Expect(profile).To(Equal(c.profile))
			g.Expect(on).To(Equal(c.on))
		})
	}
}
