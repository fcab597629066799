//go:build integration

package dataplane_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Decision 0030: each agent's peer certificate names its node, and what a peer passes on is believed only
// within bounds. These specs hold node-a's key, as a thief of that node would, and call node-b's agent
// directly about node-b's Sandbox.
var _ = Describe("calls one agent forwards to another", Ordered, func() {
	const ns = "team-peers"

	BeforeAll(func() {
		namespace(ns)
		userConfig("paula", "dockside-edit", ns)
		for name, n := range nodes {
			n.driver.SetStreamExecHandler(echoHandler(name))
		}
		runningSandbox(ns, "far", "node-b", dsv1alpha1.LifecycleRunning)
		// root may do everything, by a binding rather than by system:masters.
		Expect(k8s.Create(context.Background(), &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "peers-root"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "root"}},
		})).To(Succeed())
		DeferCleanup(func() {
			Expect(k8s.Delete(context.Background(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "peers-root"}})).To(Succeed())
		})
	})

	// asPeer POSTs an exec to node-b's agent with the client certificate in dir/crt and key, saying that
	// forwardedBy forwarded it for user in groups, and returns the status code and the Status's message.
	asPeer := func(dir, crt, key, forwardedBy, user string, groups ...string) (int, string) {
		GinkgoHelper()
		ca, err := os.ReadFile(filepath.Join(dp.AgentCertDir(), "ca.crt"))
		Expect(err).NotTo(HaveOccurred())
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(ca)).To(BeTrue())
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, crt), filepath.Join(dir, key))
		Expect(err).NotTo(HaveOccurred())
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: "dockside-dataplane.dockside-system.svc", Certificates: []tls.Certificate{pair},
		}}}
		req, err := http.NewRequest("POST", "https://"+nodes["node-b"].address+
			"/apis/subresources.dockside.dev/v1alpha1/namespaces/"+ns+"/sandboxes/far/exec?command=true&stdout=true", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-Remote-User", user)
		for _, g := range groups {
			req.Header.Add("X-Remote-Group", g)
		}
		req.Header.Set("X-Dockside-Forwarded-By", forwardedBy)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err.Error() // refused at the TLS handshake: no answer at all
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		var st metav1.Status
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			return resp.StatusCode, st.Message
		}
		return resp.StatusCode, string(body)
	}
	peerA := func(forwardedBy, user string, groups ...string) (int, string) {
		dir, err := dp.PeerCertDir("node-a") // the same CA and name as node-a's agent's: what its key would do
		Expect(err).NotTo(HaveOccurred())
		return asPeer(dir, "peer.crt", "peer.key", forwardedBy, user, groups...)
	}

	It("refuses node-a's peer certificate acting as system:masters, or as anyone who may do everything", func() {
		code, msg := peerA("node-a", "dockside-admin", "system:masters", "system:authenticated")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(ContainSubstring(`the agent of node node-a passed on user "dockside-admin", who is in group system:masters: a call one agent forwards to another never acts as a cluster administrator`))
		code, msg = peerA("node-a", "root", "system:authenticated")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(ContainSubstring(`the agent of node node-a passed on user "root", who may do everything in the cluster`))
	})

	It("refuses node-a's key claiming another node forwarded the call, and the serving certificate every agent holds", func() {
		code, msg := peerA("node-c", "paula")
		Expect(code).To(Equal(http.StatusUnauthorized))
		Expect(msg).To(ContainSubstring(`the peer certificate names node node-a, but the request says node "node-c" forwarded it`))
		code, msg = asPeer(dp.AgentCertDir(), "tls.crt", "tls.key", "node-a", "paula")
		Expect(code).To(BeZero(), "the serving certificate has no client usage, so the listener ends the handshake: %s", msg)
	})

	It("asks the API server about any other user node-a passes on", func() {
		code, msg := peerA("node-a", "mallory")
		Expect(code).To(Equal(http.StatusForbidden))
		Expect(msg).To(ContainSubstring(`User "mallory" cannot create resource "sandboxes/exec"`))
		code, msg = peerA("node-a", "paula")
		Expect(code).To(Equal(http.StatusBadRequest), "paula may: the plain POST then fails as no stream upgrade: %s", msg)
	})

	It("passes a cluster administrator on by name alone: node-a refuses, saying why, until the name is bound", func() {
		// One administrator through system:masters, one through a group bound to cluster-admin (as kubeadm's
		// admin.conf is): no agent believes either from a peer, so both go on by user name alone.
		ctx := context.Background()
		groupAdmins := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "peers-cluster-admins"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "peers:cluster-admins"}},
		}
		Expect(k8s.Create(ctx, groupAdmins)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(context.Background(), groupAdmins)).To(Succeed()) })
		for _, a := range []struct{ name, group, why string }{
			{"peers-admin", "system:masters", "is in group system:masters"},
			{"peers-group-admin", "peers:cluster-admins", "may do everything in the cluster"},
		} {
			admin, err := env.AddUser(a.name, a.group)
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() error {
				_, err := execThrough(admin, "websocket", ns, "far", "", "hostname")
				return err
			}).WithTimeout(time.Minute).Should(MatchError(And(
				ContainSubstring(`Sandbox "far" runs on node node-b, and this agent (node node-a) passes user %q, who %s, on to its agent by user name alone`, a.name, a.why),
				ContainSubstring(`User %q cannot create resource "sandboxes/exec"`, a.name))))
			Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "dockside-edit"},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: a.name}},
			})).To(Succeed())
			Eventually(func() (string, error) {
				return execThrough(admin, "websocket", ns, "far", "", "hostname")
			}).WithTimeout(time.Minute).Should(Equal("on node-b: hostname\n"), a.name)
		}
	})
})
