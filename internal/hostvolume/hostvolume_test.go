package hostvolume

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
)

// A directory that is not the volume's tmpfs mount (what an agent sees under a mount that did not propagate)
// is no root: what is read or written there is not what the container sees.
func TestRootRefusesWhatIsNotTheVolumesMount(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Root(t.TempDir(), 1<<20)).To(BeNil())
	g.Expect(Root(filepath.Join(t.TempDir(), "missing"), 1<<20)).To(BeNil())
}

func TestOpenInFollowsNoLinkAndKeepsDotDotInTheRoot(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "f"), []byte("in"), 0o600)).To(Succeed())
	g.Expect(os.Symlink("f", filepath.Join(dir, "link"))).To(Succeed())
	root, err := os.Open(dir)
	g.Expect(err).NotTo(HaveOccurred())
	defer root.Close()
	f, err := OpenIn(root, "../../f", "/v/f", unix.O_RDONLY, 0)
	g.Expect(err).NotTo(HaveOccurred(), "'..' stays in the root, where f is")
	f.Close()
	_, err = OpenIn(root, "link", "/v/link", unix.O_RDONLY, 0)
	g.Expect(err).To(MatchError(unix.ELOOP))
	g.Expect(err).To(MatchError(ContainSubstring("/v/link")), "errors name the path as the caller gave it")
}
