package imagepuller

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

const (
	privateRef = "registry.example:5000/team/secret:1"
	privateID  = "sha256:1111"
)

var (
	credsA = &dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "team-a", Password: "a-pw"}
	credsB = &dd.RegistryAuth{ServerAddress: "https://registry.example:5000/v2/", Username: "team-b", Password: "b-pw"}
)

func TestRecordsLetOnlyVerifiedCredentialsUseAPrivateImage(t *testing.T) {
	g := NewWithT(t)
	r, err := OpenRecords("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Usable(privateRef, privateID, nil)).To(BeTrue(), "never pulled by the agent: node-local")

	g.Expect(r.pulling(privateRef)).To(Succeed())
	g.Expect(r.Usable(privateRef, privateID, credsA)).To(BeFalse(), "a credentialed pull that left no record: nobody's")
	g.Expect(r.Usable("registry.example:5000/team/secret@sha256:22", "sha256:2222", nil)).To(BeFalse(), "any image of the repository")

	g.Expect(r.pulled(privateRef, privateID, credsA)).To(Succeed())
	g.Expect(r.Usable(privateRef, privateID, credsA)).To(BeTrue())
	g.Expect(r.Usable(privateRef, privateID, &dd.RegistryAuth{ServerAddress: "registry.example:5000", Username: "team-a", Password: "A-pw"})).To(BeFalse())
	g.Expect(r.Usable(privateRef, privateID, credsB)).To(BeFalse())
	g.Expect(r.Usable(privateRef, privateID, nil)).To(BeFalse())
	g.Expect(r.Usable("dockside.dev/busybox:local", privateID, nil)).To(BeTrue(), "the same content built on the node under another name")

	g.Expect(r.pulled(privateRef, privateID, credsB)).To(Succeed())
	g.Expect(r.Usable(privateRef, privateID, credsB)).To(BeTrue())
	g.Expect(r.Usable(privateRef, privateID, nil)).To(BeFalse())
	g.Expect(r.pulled(privateRef, privateID, nil)).To(Succeed())
	g.Expect(r.Usable(privateRef, privateID, nil)).To(BeTrue(), "an anonymous pull brought it: public")
}

func TestRecordsOutliveTheAgentAndHoldNoSecret(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "state", ".node-a.image-pulls.json")
	r, err := OpenRecords(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.pulling(privateRef)).To(Succeed())
	g.Expect(r.pulled(privateRef, privateID, credsA)).To(Succeed())
	g.Expect(r.pulling("registry.example:5000/team/crashed:1")).To(Succeed())

	again, err := OpenRecords(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Usable(privateRef, privateID, credsA)).To(BeTrue())
	g.Expect(again.Usable(privateRef, privateID, credsB)).To(BeFalse())
	g.Expect(again.Usable("registry.example:5000/team/crashed:1", "sha256:3333", credsA)).To(BeFalse())
	info, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	raw, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(raw)).NotTo(ContainSubstring("a-pw"))
	g.Expect(string(raw)).NotTo(ContainSubstring("team-a"))
}

func TestRecordsThatCannotBeReadStopTheAgent(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "pulls.json")
	g.Expect(os.WriteFile(path, []byte(`{"images": {`), 0o600)).To(Succeed())
	_, err := OpenRecords(path)
	g.Expect(err).To(MatchError(ContainSubstring("not readable")))
}

func TestPullerRecordsWhoPulledAndWhomTheRegistryRefused(t *testing.T) {
	g := NewWithT(t)
	p, docker, _ := newTestPuller(t)
	docker.AddRegistryImage(privateRef, fake.RegistryImage{Info: dd.ImageInfo{ID: privateID}, Auth: credsA})
	docker.AddRegistryImage("registry.example/public:1", fake.RegistryImage{})
	brought := func(req Request) func() bool {
		return func() bool { _, ok := p.Brought(req); return ok }
	}

	a := request(privateRef, "a", time.Minute)
	a.Auth = credsA
	p.Pull(a)
	g.Eventually(brought(a)).Should(BeTrue())
	g.Expect(p.Usable(privateRef, privateID, credsA)).To(BeTrue())
	g.Expect(p.Usable(privateRef, privateID, nil)).To(BeFalse())

	b := request(privateRef, "b", time.Minute)
	b.Auth = credsB
	p.Pull(b)
	var st State
	g.Eventually(func() bool { var ok bool; st, ok = p.Refused(b); return ok }).Should(BeTrue())
	g.Expect(st.News).To(BeTrue(), "the refusal is news to the start that waited on it")
	st, _ = p.Refused(b)
	g.Expect(st.News).To(BeFalse(), "once")
	g.Expect(p.Usable(privateRef, privateID, credsB)).To(BeFalse())
	_, refused := p.Refused(a)
	g.Expect(refused).To(BeFalse(), "A's pull went through")

	pub := request("registry.example/public:1", "c", time.Minute)
	p.Pull(pub)
	g.Eventually(brought(pub)).Should(BeTrue())
	g.Expect(p.Usable("registry.example/public:1", "sha256:registry.example/public:1", credsB)).To(BeTrue())
}

func TestPullerFailsAPullWhoseImageItCannotLookAt(t *testing.T) {
	g := NewWithT(t)
	p, docker, _ := newTestPuller(t)
	docker.AddRegistryImage(privateRef, fake.RegistryImage{Info: dd.ImageInfo{ID: privateID}, Auth: credsA})
	docker.FailNext(fake.OpInspectImage, dd.KindUnavailable)
	a := request(privateRef, "a", time.Minute)
	a.Auth = credsA
	p.Pull(a)
	var st State
	g.Eventually(func() error { st = p.Pull(a); return st.Err }).Should(HaveOccurred())
	g.Expect(dd.KindOf(st.Err)).To(Equal(dd.KindUnavailable))
	g.Expect(p.Usable(privateRef, privateID, credsA)).To(BeFalse(), "what the pull brought is unknown: nobody's")
}
