package dockerdriver

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestInitInfoAvailable(t *testing.T) {
	cases := map[string]struct {
		info InitInfo
		ok   bool
		why  string
	}{
		"Docker's own tini, with a commit":      {InitInfo{Binary: "docker-init", Commit: "de40ad0"}, true, ""},
		"Debian's tini, whose version has none": {InitInfo{Binary: "docker-init"}, true, ""},
		"a binary the daemon could not run":     {InitInfo{Binary: "/opt/init", Commit: "N/A"}, false, `could not run its init binary "/opt/init"`},
		"no binary named":                       {InitInfo{}, false, "names no init binary"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ok, why := c.info.Available()
			g.Expect(ok).To(Equal(c.ok))
			if c.why == "" {
				g.Expect(why).To(BeEmpty())
			} else {
				g.Expect(why).To(ContainSubstring(c.why))
			}
		})
	}
}

func TestCreateRequestAsksForInitOnlyWhenTheSpecDoes(t *testing.T) {
	g := NewWithT(t)
	spec := ContainerSpec{Image: "img", Resources: Resources{MemoryBytes: 1 << 20, NanoCPUs: 1e9, PIDs: 8}}
	_, host, _ := createRequest("node", spec, "")
	g.Expect(host.Init).To(BeNil(), "the daemon's default")
	spec.Init = true
	_, host, _ = createRequest("node", spec, "")
	g.Expect(host.Init).To(HaveValue(BeTrue()))
}
