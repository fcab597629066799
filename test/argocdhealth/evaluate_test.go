package argocdhealth

import (
	"os"
	"path/filepath"
	"testing"
)

// script is Dockside's health check, read from the file config/argocd ships.
func script(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// object is a Dockside object at generation 2 with the given status.
func object(status map[string]any) map[string]any {
	obj := map[string]any{
		"apiVersion": "dockside.dev/v1alpha1", "kind": "Sandbox",
		"metadata": map[string]any{"name": "box", "namespace": "ns", "generation": int64(2)},
	}
	if status != nil {
		obj["status"] = status
	}
	return obj
}

// condition is one status condition as the API server serves it.
func condition(typ, status, reason, message string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": message,
		"observedGeneration": int64(2), "lastTransitionTime": "2026-12-01T21:00:00Z"}
}

// summary is the three kstatus conditions the agent always writes together (internal/status).
func summary(ready, stalled bool, reason, message string) []any {
	word := map[bool]string{true: "True", false: "False"}
	return []any{
		condition("Ready", word[ready], reason, message),
		condition("Reconciling", word[!ready && !stalled], reason, message),
		condition("Stalled", word[stalled], reason, message),
	}
}

// The e2e spec (test/e2e/argocd_health_test.go) runs the script on what the agent writes; this covers the
// branches it cannot reach on purpose, such as an object no agent has seen yet.
func TestDocksideHealth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status map[string]any
		want   Health
	}{
		{"no status yet", nil, Health{"Progressing", "waiting for the Dockside agent"}},
		{"the defaulted status", map[string]any{"observedGeneration": int64(0)}, Health{"Progressing", "waiting for the Dockside agent"}},
		{"conditions of an older generation", map[string]any{"observedGeneration": int64(1), "conditions": summary(true, false, "Running", "up")},
			Health{"Progressing", "waiting for the Dockside agent to see generation 2"}},
		{"converging", map[string]any{"observedGeneration": int64(2), "conditions": summary(false, false, "Creating", "building the topology")},
			Health{"Progressing", "Creating: building the topology"}},
		{"ready", map[string]any{"observedGeneration": int64(2), "conditions": summary(true, false, "Running", "")},
			Health{"Healthy", "Running"}},
		{"lazy, not started", map[string]any{"observedGeneration": int64(2), "conditions": append(summary(true, false, "Lazy", "no container yet"),
			condition("Paused", "False", "Running", "not paused"))},
			Health{"Healthy", "Lazy: no container yet"}},
		{"stalled", map[string]any{"observedGeneration": int64(2), "conditions": summary(false, true, "ImageNotPresent", "no image")},
			Health{"Degraded", "ImageNotPresent: no image"}},
		{"paused", map[string]any{"observedGeneration": int64(2), "conditions": append(summary(true, false, "Paused", "frozen"),
			condition("Paused", "True", "Paused", "every container of the Sandbox is frozen"))},
			Health{"Suspended", "Paused: frozen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Evaluate(script(t), object(tc.status))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The harness must be as strict as Argo CD, or a script passing here could fail there.
func TestEvaluateIsAsStrictAsArgoCD(t *testing.T) {
	obj := object(nil)
	if _, err := Evaluate(`return { status = string.format("%s", "Healthy") }`, obj); err == nil {
		t.Error("the string library is there; Argo CD gives user scripts none")
	}
	if _, err := Evaluate(`while true do end`, obj); err == nil {
		t.Error("an endless script ran past the time limit")
	}
	if _, err := Evaluate(`return "Healthy"`, obj); err == nil {
		t.Error("a script returning no table was accepted")
	}
	got, err := Evaluate(`return { status = "Fine" }`, obj)
	if err != nil || got.Status != "Unknown" {
		t.Errorf("an invalid status read as %+v, %v; Argo CD reads it as Unknown", got, err)
	}
	got, err = Evaluate(`return { status = "Healthy", message = obj.metadata.name .. " at " .. obj.metadata.generation }`, obj)
	if err != nil || got.Message != "box at 2" {
		t.Errorf("obj read as %+v, %v; want its name and its generation as a whole number", got, err)
	}
}
