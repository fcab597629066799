//go:build integration

package api_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var samplesDir = filepath.Join("..", "..", "..", "config", "samples")

// localImages are the only images samples may name: no registry is reachable, so each is built locally by
// hack/build-images.sh.
var localImages = []string{
	"dockside.dev/busybox:local", "dockside.dev/python:local", "dockside.dev/redis:local", "dockside.dev/base:local",
}

// sampleFiles are the manifests in config/samples, which users apply with `kubectl apply -f config/samples/`
// (so the folder holds manifests only: a kustomization.yaml there would be sent to the API server too).
func sampleFiles() []string {
	paths, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(paths).NotTo(BeEmpty())
	var names []string
	for _, path := range paths {
		names = append(names, filepath.Base(path))
	}
	return names
}

// apiDoc is the API's page, whose YAML examples, one per kind, must be accepted as they are.
var apiDoc = filepath.Join("..", "..", "..", "docs", "api.md")

// yamlBlocks are the ```yaml code blocks of a Markdown file.
func yamlBlocks(path string) []string {
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

var _ = Describe("samples", func() {
	It("accepts every sample, with at least one per kind, naming only local images", func(ctx context.Context) {
		ns := newNamespace(ctx)
		kinds := map[string]int{}
		busyboxOnly := 0
		for _, file := range sampleFiles() {
			raw, err := os.ReadFile(filepath.Join(samplesDir, file))
			Expect(err).NotTo(HaveOccurred())
			obj := fromYAML(string(raw), ns)
			Expect(k8s.Create(ctx, obj)).To(Succeed(), file)
			kinds[obj.GetKind()]++

			image, hasImage, _ := unstructured.NestedString(obj.Object, "spec", "image")
			if obj.GetKind() == "SandboxTemplate" {
				image, hasImage, _ = unstructured.NestedString(obj.Object, "spec", "sandbox", "image")
			}
			if hasImage {
				Expect(localImages).To(ContainElement(image), file)
			}
			services, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "services")
			if obj.GetKind() == "Sandbox" && image == localImages[0] && len(services) == 0 {
				busyboxOnly++
			}
		}
		Expect(kinds).To(HaveKey("Sandbox"))
		Expect(kinds).To(HaveKey("SandboxService"))
		Expect(kinds).To(HaveKey("Checkpoint"))
		Expect(busyboxOnly).To(BeNumerically(">=", 1), "a Sandbox sample that needs nothing but the busybox image")
	})

	It("accepts every example of docs/api.md", func(ctx context.Context) {
		ns := newNamespace(ctx)
		examples := yamlBlocks(apiDoc)
		kinds := map[string]int{}
		for _, example := range examples {
			obj := fromYAML(example, ns)
			Expect(k8s.Create(ctx, obj)).To(Succeed(), example)
			kinds[obj.GetKind()]++
		}
		Expect(kinds).To(Equal(map[string]int{"Sandbox": 1, "SandboxService": 1, "Checkpoint": 1, "Execution": 1}),
			"one complete example per kind")
	})
})
