package imagepuller

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestRepositoryAndRegistry(t *testing.T) {
	g := NewWithT(t)
	for ref, repo := range map[string]string{
		"busybox":                             "docker.io/library/busybox",
		"busybox:1.36":                        "docker.io/library/busybox",
		"team/tool:1":                         "docker.io/team/tool",
		"index.docker.io/team/tool@sha256:a":  "docker.io/team/tool",
		"registry.example/team/tool:1":        "registry.example/team/tool",
		"Registry.Example:5000/tool@sha256:a": "registry.example:5000/tool",
		"registry.example:5000/tool":          "registry.example:5000/tool",
		"localhost/tool":                      "localhost/tool",
		"127.0.0.1:1/nothing/here:1":          "127.0.0.1:1/nothing/here",
		"dockside.dev/busybox:local":          "dockside.dev/busybox",
	} {
		g.Expect(Repository(ref)).To(Equal(repo), ref)
	}
	g.Expect(Registry("team/tool:1")).To(Equal("docker.io"))
	g.Expect(Registry("127.0.0.1:1/nothing/here:1")).To(Equal("127.0.0.1:1"))
	g.Expect(RegistryHost("https://index.docker.io/v1/")).To(Equal("docker.io"))
	g.Expect(RegistryHost("http://registry.example:5000/v2/")).To(Equal("registry.example:5000"))
}
