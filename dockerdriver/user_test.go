package dockerdriver

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestRunAs(t *testing.T) {
	g := NewWithT(t)
	for image, want := range map[string]string{
		"":              NonRootUser, // unset: Docker would run it as root
		"root":          NonRootUser,
		"0":             NonRootUser,
		"0:0":           NonRootUser,
		"000":           NonRootUser, // still uid 0
		"root:root":     NonRootUser,
		"0:1000":        NonRootUser,
		"nobody":        NonRootUser, // a name: uid 0 in the image's /etc/passwd for all we know
		"app:app":       NonRootUser,
		"-1":            NonRootUser,
		"1000":          "1000",
		"1000:1000":     "1000:1000",
		"999:999":       "999:999",
		"1000:0":        "1000:0", // group root, as OpenShift-style images have it; the uid decides
		"1000:staff":    "1000:staff",
		"65534:65534":   "65534:65534",
		"4294967296:1":  NonRootUser, // not a uid
		" 1000":         NonRootUser,
		"1000 ":         NonRootUser,
		"1000:1000:999": "1000:1000:999", // Docker refuses it at start; never root either way
	} {
		g.Expect(RunAs(ContainerSpec{}, image)).To(Equal(want), "image USER %q", image)
		g.Expect(RunAs(ContainerSpec{RunAsRoot: true}, image)).To(Equal(RootUser), "image USER %q with RunAsRoot", image)
	}
}
