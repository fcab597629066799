package dockerdriver

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

func TestFollowPullAddsUpLayersAndKeepsTheDigest(t *testing.T) {
	g := NewWithT(t)
	stream := strings.Join([]string{
		`{"status":"Pulling from team/tool","id":"1.2"}`,
		`{"status":"Pulling fs layer","progressDetail":{},"id":"aaa"}`,
		`{"status":"Already exists","progressDetail":{},"id":"bbb"}`,
		`{"status":"Downloading","progressDetail":{"current":512,"total":2048},"id":"aaa"}`,
		`{"status":"Download complete","progressDetail":{},"id":"aaa"}`,
		`{"status":"Pull complete","progressDetail":{},"id":"aaa"}`,
		`{"status":"Digest: sha256:0123"}`,
		`{"status":"Status: Downloaded newer image for registry.example/team/tool:1.2"}`,
	}, "\n")
	var seen []PullProgress
	res, err := (&Docker{}).followPull(context.Background(), "registry.example/team/tool:1.2", strings.NewReader(stream), func(p PullProgress) {
		seen = append(seen, p)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Digest).To(Equal("sha256:0123"))
	g.Expect(seen).To(HaveLen(5), "one report per layer message, none for the others")
	g.Expect(seen[2]).To(Equal(PullProgress{Layers: 2, LayersDone: 1, BytesDone: 512, BytesTotal: 2048}))
	g.Expect(seen[len(seen)-1]).To(Equal(PullProgress{Layers: 2, LayersDone: 2, BytesDone: 2048, BytesTotal: 2048}))
}

func TestFollowPullClassifiesStreamErrorsWithoutTheirText(t *testing.T) {
	cases := map[string]struct {
		text   string
		kind   Kind
		reason string
	}{
		"missing":     {"manifest for registry.example/x:1 not found: manifest unknown", KindNotFound, pullNotFound},
		"credentials": {"unauthorized: authentication required for user hunter2", KindConflict, pullUnauthorized},
		"unreachable": {`Get "https://10.0.0.1/v2/": dial tcp 10.0.0.1:443: connect: connection refused`, KindUncertain, "the registry could not be reached"},
		"rate limit":  {"toomanyrequests: you have reached your pull rate limit", KindUncertain, "the registry limits pulls for now"},
		"other":       {"failed to register layer: hunter2", KindUncertain, "the pull failed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			stream := `{"status":"Pulling from x","id":"1"}` + "\n" + `{"errorDetail":{"message":` + quote(c.text) + `},"error":` + quote(c.text) + `}`
			_, err := (&Docker{}).followPull(context.Background(), "registry.example/x:1", strings.NewReader(stream), nil)
			g.Expect(KindOf(err)).To(Equal(c.kind))
			g.Expect(PhaseOf(err)).To(Equal(PhaseImage))
			g.Expect(err.Error()).To(Equal("image registry.example/x:1: " + string(c.kind) + ": " + c.reason))
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
		})
	}
}

func TestFollowPullCutShortIsUncertain(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&Docker{}).followPull(ctx, "x:1", strings.NewReader(`{"status":"Pulling fs layer","id":"a"`), nil)
	g.Expect(KindOf(err)).To(Equal(KindUncertain))
	g.Expect(err.Error()).To(ContainSubstring("did not finish before its deadline"))
}

func TestRegistryAuthPrintsNoSecret(t *testing.T) {
	g := NewWithT(t)
	a := RegistryAuth{ServerAddress: "registry.example", Username: "me", Password: "hunter2", IdentityToken: "tok"}
	for _, s := range []string{a.String(), a.GoString(), a.MarshalLog().(string)} {
		g.Expect(s).To(ContainSubstring("registry.example"))
		g.Expect(s).NotTo(ContainSubstring("hunter2"))
		g.Expect(s).NotTo(ContainSubstring("tok"))
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
