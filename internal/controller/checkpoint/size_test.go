package checkpoint

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHumanSizeRoundsToTheLargestBinaryUnit(t *testing.T) {
	g := NewWithT(t)
	for n, want := range map[int64]string{
		0:                   "0",
		812:                 "812",
		1023:                "1023",
		1024:                "1Ki",
		1536:                "1.5Ki",
		10 << 10:            "10Ki",
		10*1024 + 600:       "11Ki",
		10199:               "10Ki", // 9.96Ki: one decimal would read 10.0
		1024*1024 - 1:       "1Mi",  // 1023.999Ki is written as the next unit
		256 << 20:           "256Mi",
		52428800 + 10240:    "50Mi", // a 50 MiB file with its tar headers
		3<<30 + 200<<20:     "3.2Gi",
		1<<62 + 1<<61:       "6Ei",
		9223372036854775807: "8Ei",
	} {
		got := humanSize(n)
		g.Expect(got).To(Equal(want), "%d bytes", n)
		// It is a Kubernetes quantity, within the rounding of its last digit.
		q := resource.MustParse(got) // panics on anything else
		g.Expect(q.AsApproximateFloat64()).To(BeNumerically("~", float64(n), float64(n)/19+1), "%d bytes", n)
	}
}
