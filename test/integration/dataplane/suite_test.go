//go:build integration

// Package dataplane_test runs the agents' data plane behind a real kube-apiserver started as its front proxy
// (internal/localcluster, as make run starts it), with the fake driver: who may exec and who may not, through
// the aggregator with client-go's executors, and what the server itself refuses.
package dataplane_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/dataplane"
	"github.com/dockside-dev/dockside/internal/dataplane/files"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/localcluster"
	"github.com/dockside-dev/dockside/test/internal/envtestenv"
	"github.com/dockside-dev/dockside/test/internal/loopback"
)

const leaseNamespace = "kube-system"

// requestTimeout is kube-apiserver's --request-timeout here, short so that a files transfer outlives it
// (files_test.go); every other call of the suite takes a fraction of it.
const requestTimeout = 5 * time.Second

var (
	env      *envtestenv.Env
	k8s      client.Client
	certDir  string
	dp       *localcluster.Dataplane
	nodes    = map[string]*agentNode{} // by node name
	repoRoot = filepath.Join("..", "..", "..")
)

// agentNode is one agent's data plane on its own port with its own fake daemon.
type agentNode struct {
	name    string
	address string
	driver  *fake.Driver
	idle    *handoff.Idle
	resumed chan types.NamespacedName // the Sandboxes a call thawed from an idle pause
}

func TestDataplane(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "data plane behind a real kube-apiserver (fake driver)")
}

var _ = BeforeSuite(func() {
	ports, err := loopback.FreePorts(2)
	Expect(err).NotTo(HaveOccurred())
	certDir = filepath.Join(GinkgoT().TempDir(), "pki")
	dp = &localcluster.Dataplane{Port: int32(ports[0]), CertDir: certDir}
	env, err = envtestenv.Start(localcluster.Options{Dataplane: dp, RequestTimeout: requestTimeout})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(env.Stop()).To(Succeed()) })
	k8s = env.Client
	applyUserRoles()
	// node-a is where the APIService's Service points; node-b is reached only by forwarding.
	for i, name := range []string{"node-a", "node-b"} {
		nodes[name] = startNode(name, fmt.Sprintf("127.0.0.1:%d", ports[i]))
	}
	Eventually(func(g Gomega) {
		api := &unstructured.Unstructured{}
		api.SetAPIVersion("apiregistration.k8s.io/v1")
		api.SetKind("APIService")
		g.Expect(k8s.Get(context.Background(), client.ObjectKey{Name: "v1alpha1.subresources.dockside.dev"}, api)).To(Succeed())
		conditions, _, _ := unstructured.NestedSlice(api.Object, "status", "conditions")
		g.Expect(conditions).To(ContainElement(And(HaveKeyWithValue("type", "Available"), HaveKeyWithValue("status", "True"))))
	}).WithTimeout(time.Minute).Should(Succeed(), "the aggregator finds the data plane available")
})

// startNode runs one agent's data plane until the suite ends, publishing its address on its node's Lease.
func startNode(name, address string) *agentNode {
	ctx, cancel := context.WithCancel(context.Background())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: "dockside-agent-" + name}}
	Expect(k8s.Create(ctx, lease)).To(Succeed())
	n := &agentNode{name: name, address: address, driver: fake.New(name), resumed: make(chan types.NamespacedName, 16)}
	n.idle = &handoff.Idle{Thaw: n.driver, Wake: func(key types.NamespacedName) { n.resumed <- key }}
	peerDir, err := dp.PeerCertDir(name)
	Expect(err).NotTo(HaveOccurred())
	srv, err := dataplane.New(dataplane.Options{
		Node: name, BindAddress: address, CertDir: dp.AgentCertDir(), PeerCertDir: peerDir,
		Client: k8s, Reader: k8s, Driver: n.driver, LeaseNamespace: leaseNamespace, AdvertiseAddress: address,
		LeaseName:  func(node string) string { return "dockside-agent-" + node },
		ServerName: "dockside-dataplane.dockside-system.svc", CaptureWait: 2 * time.Second, Log: logr.Discard(),
		Files: &files.Handler{Driver: n.driver, SpoolDir: GinkgoT().TempDir()}, Idle: n.idle,
	})
	Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
	})
	Eventually(func() error {
		c, err := net.Dial("tcp", address)
		if err == nil {
			c.Close()
		}
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return n
}

// applyUserRoles creates the ClusterRoles of config/rbac/user_roles.yaml.
func applyUserRoles() {
	f, err := os.Open(filepath.Join(repoRoot, "config", "rbac", "user_roles.yaml"))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); err != nil {
			break
		}
		Expect(k8s.Create(context.Background(), &role)).To(Succeed())
	}
}

// userConfig makes user and binds it to role in each of namespaces.
func userConfig(user, role string, namespaces ...string) *rest.Config {
	cfg, err := env.AddUser(user)
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range namespaces {
		Expect(k8s.Create(context.Background(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
	}
	return cfg
}

func namespace(name string) {
	Expect(k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}
