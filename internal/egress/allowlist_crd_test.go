package egress

import "testing"

// The API server admits network.allow entries by the CRD's rules (api/v1alpha1, Network.Allow); every form
// they admit must parse here too, or the proxy would refuse a Sandbox whose list the API accepted.
func TestEveryFormTheCRDAdmitsParses(t *testing.T) {
	admitted := []string{
		"pypi.org", "files.pythonhosted.org:443", "*.githubusercontent.com", "*.example.com:8443",
		"203.0.113.7:80", "203.0.113.7", "localhost", "a-b.c-d.example:65535", "x1.y2", "*.io",
	}
	if _, err := ParseAllowlist(admitted); err != nil {
		t.Fatalf("an entry the CRD admits is refused: %v", err)
	}
}
