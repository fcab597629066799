package agent

import (
	"testing"
	"time"

	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

func TestRetryBackoffs(t *testing.T) {
	for name, c := range map[string]struct {
		min, max         time.Duration
		ok               bool
		wantMin, wantMax time.Duration
	}{
		"defaults":                    {ok: true, wantMin: DefaultMinBackoff, wantMax: DefaultMaxBackoff},
		"both set":                    {min: time.Second, max: 5 * time.Minute, ok: true, wantMin: time.Second, wantMax: 5 * time.Minute},
		"equal":                       {min: time.Second, max: time.Second, ok: true, wantMin: time.Second, wantMax: time.Second},
		"longest below the first":     {min: time.Second, max: 500 * time.Millisecond},
		"first above the default max": {min: 2 * time.Minute},
		"negative":                    {min: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			o := Options{Node: "node-a", Driver: fake.New("node-a"), MinBackoff: c.min, MaxBackoff: c.max}
			err := o.defaults()
			if (err == nil) != c.ok {
				t.Fatalf("defaults() = %v, want ok=%v", err, c.ok)
			}
			if c.ok && (o.MinBackoff != c.wantMin || o.MaxBackoff != c.wantMax) {
				t.Fatalf("backoffs %s to %s, want %s to %s", o.MinBackoff, o.MaxBackoff, c.wantMin, c.wantMax)
			}
		})
	}
}
