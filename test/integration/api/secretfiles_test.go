//go:build integration

package api_test

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// secretFiles is a Sandbox whose secretFiles are the flow YAML list files, with extra spec fields.
func secretFiles(files string, extra ...string) string {
	return sandbox(`{image: busybox, secretFiles: ` + files + strings.Join(extra, "") + `}`)
}

// file is one secretFiles entry of Secret creds at path.
func file(path string) string { return fmt.Sprintf(`{secretName: creds, key: token, path: %q}`, path) }

var _ = Describe("secretFiles", func() {
	DescribeTable("refuses bad secretFiles with a message a person understands, leaving nothing behind",
		expectRefused,
		Entry("an absolute path", secretFiles(`[`+file("/etc/token")+`]`), "secretFiles path must be relative to /run/secrets/dockside"),
		Entry("a path out of the directory", secretFiles(`[`+file("../token")+`]`), "secretFiles path must not contain '.' or '..' segments"),
		Entry("a '..' inside the path", secretFiles(`[`+file("a/../../token")+`]`), "secretFiles path must not contain '.' or '..' segments"),
		Entry("a '.' segment", secretFiles(`[`+file("./token")+`]`), "secretFiles path must not contain '.' or '..' segments"),
		Entry("a trailing '/'", secretFiles(`[`+file("aws/")+`]`), "without a trailing '/'"),
		Entry("a '//'", secretFiles(`[`+file("aws//credentials")+`]`), "in names separated by single '/'"),
		Entry("a space in the path", secretFiles(`[`+file("my token")+`]`), "secretFiles path may hold only letters"),
		Entry("the same path twice", secretFiles(`[`+file("token")+`, {secretName: other, key: k, path: token}]`), "secretFiles paths must be unique"),
		Entry("a file that is also a directory", secretFiles(`[`+file("aws")+`, `+file("aws/credentials")+`]`), "cannot be both a file and the directory of another path"),
		Entry("too many files", secretFiles(manyFiles(17)), "must have at most 16 items"),
		Entry("a key with a '/'", secretFiles(`[{secretName: creds, key: a/b, path: token}]`), "secretFiles key may hold only"),
		Entry("a Secret name in capitals", secretFiles(`[{secretName: Creds, key: token, path: token}]`), "secretFiles secretName must be a DNS subdomain"),
		Entry("no path", secretFiles(`[{secretName: creds, key: token}]`), "path: Required value"),
		Entry("the workspace at the files' directory", secretFiles(`[`+file("token")+`]`, `, workspace: {mountPath: /run/secrets/dockside}`), "the workspace and scratch mountPaths must not be that directory or under it"),
		Entry("a scratch mount under the files' directory", secretFiles(`[`+file("token")+`]`, `, scratch: [{mountPath: /run/secrets/dockside/x, size: 1Mi}]`), "the workspace and scratch mountPaths must not be that directory or under it"),
	)

	It("admits 16 files in directories, a workspace or scratch beside or above their directory, and changes to them", func(ctx context.Context) {
		ns := newNamespace(ctx)
		u := fromYAML(manifest("Sandbox", "creds", `{image: busybox, secretFiles: `+manyFiles(16)+
			`, workspace: {mountPath: /run/secrets/docksidex}, scratch: [{mountPath: /run, size: 1Mi}]}`), ns)
		Expect(k8s.Create(ctx, u)).To(Succeed())
		Expect(unstructured.SetNestedSlice(u.Object, []any{
			map[string]any{"secretName": "creds", "key": "aws", "path": "aws/credentials"},
			map[string]any{"secretName": "kube", "key": "config", "path": "kube/config.yaml"},
		}, "spec", "secretFiles")).To(Succeed())
		Expect(k8s.Update(ctx, u)).To(Succeed(), "secretFiles may change: the topology rolls")
		unstructured.RemoveNestedField(u.Object, "spec", "secretFiles")
		Expect(k8s.Update(ctx, u)).To(Succeed(), "and go")
	})
})

// manyFiles is a flow YAML list of n secretFiles, each in a directory of its own.
func manyFiles(n int) string {
	var files []string
	for i := range n {
		files = append(files, file(fmt.Sprintf("dir%d/token-%d.txt", i, i)))
	}
	return "[" + strings.Join(files, ", ") + "]"
}
