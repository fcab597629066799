package agent

import "testing"

func TestDNSLeakingEngines(t *testing.T) {
	for version, leaks := range map[string]bool{
		"20.10.24+dfsg1": true, "20.10.5": true, "23.0.10": true, "23.0.11": false, "24.0.9": true,
		"25.0.3": true, "25.0.4": false, "25.0.5-1": false, "26.1.0": false, "27.3.1": false, "fake": true, "": true,
	} {
		if got := dnsLeaks(version); got != leaks {
			t.Errorf("dnsLeaks(%q) = %v, want %v", version, got, leaks)
		}
	}
}
