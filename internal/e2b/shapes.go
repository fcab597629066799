package e2b

import (
	"encoding/json"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// What the gateway writes on the objects it makes: the API server is its only store (docs/e2b.md, "What maps
// to what").
const (
	// LabelTemplate marks a Sandbox made through the gateway and names the template (E2B's templateID).
	LabelTemplate = "e2b.dockside.dev/template"
	// AnnotationMetadata holds the create call's metadata, as JSON.
	AnnotationMetadata = "e2b.dockside.dev/metadata"
)

// envdVersion is the envd version the gateway answers as: the SDKs turn features on by it (octet-stream
// uploads from 0.5.7, closeStdin from 0.5.2, the template's own user from 0.4.0).
const envdVersion = "0.5.7"

// clientID is E2B's "identifier of the client", which Dockside has no counterpart of.
const clientID = "dockside"

// newSandbox is the body of POST /sandboxes (E2B's NewSandbox).
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int64            `json:"timeout,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	EnvVars             map[string]string `json:"envVars,omitempty"`
	AutoPause           bool              `json:"autoPause,omitempty"`
	Secure              bool              `json:"secure,omitempty"`
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Network             json.RawMessage   `json:"network,omitempty"`
	MCP                 json.RawMessage   `json:"mcp,omitempty"`
	VolumeMounts        json.RawMessage   `json:"volumeMounts,omitempty"`
}

// createdSandbox is E2B's Sandbox: the answer of create, resume and connect.
type createdSandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is the token the sandbox's ports take (network.allowPublicTraffic false), else null.
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             any     `json:"domain"`
}

// sandboxDetail is E2B's SandboxDetail (GET /sandboxes/{id}); listed entries (ListedSandbox) are the same
// fields less the token and domain, plus diskSizeMB.
type sandboxDetail struct {
	TemplateID      string            `json:"templateID"`
	SandboxID       string            `json:"sandboxID"`
	ClientID        string            `json:"clientID"`
	StartedAt       time.Time         `json:"startedAt"`
	EndAt           time.Time         `json:"endAt"`
	CPUCount        int64             `json:"cpuCount"`
	MemoryMB        int64             `json:"memoryMB"`
	DiskSizeMB      int64             `json:"diskSizeMB"`
	State           string            `json:"state"`
	EnvdVersion     string            `json:"envdVersion"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	EnvdAccessToken string            `json:"envdAccessToken,omitempty"`
	Domain          any               `json:"domain,omitempty"`
}

// timeoutBody is the body of POST /sandboxes/{id}/timeout, resume and connect.
type timeoutBody struct {
	Timeout   *int64 `json:"timeout,omitempty"`
	AutoPause bool   `json:"autoPause,omitempty"`
}

// State values of E2B's SandboxState.
const (
	stateRunning = "running"
	statePaused  = "paused"
)

func stateOf(sbx *dsv1alpha1.Sandbox) string {
	if sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused {
		return statePaused
	}
	return stateRunning
}

// startedAt is when the Sandbox's deadline counts from: its start, else its creation.
func startedAt(sbx *dsv1alpha1.Sandbox) time.Time {
	if sbx.Status.StartTime != nil {
		return sbx.Status.StartTime.Time
	}
	return sbx.CreationTimestamp.Time
}

// maxDeadline is the API's bound on spec.activeDeadlineSeconds (7 days).
const maxDeadline = 604800

// endAt is when the deadline stops the Sandbox; a Sandbox without one ends, as far as E2B can say, at the
// longest deadline Dockside allows.
func endAt(sbx *dsv1alpha1.Sandbox) time.Time {
	d := int64(maxDeadline)
	if sbx.Spec.ActiveDeadlineSeconds != nil {
		d = *sbx.Spec.ActiveDeadlineSeconds
	}
	return startedAt(sbx).Add(time.Duration(d) * time.Second)
}

func detailOf(sbx *dsv1alpha1.Sandbox) sandboxDetail {
	d := sandboxDetail{
		TemplateID:  sbx.Labels[LabelTemplate],
		SandboxID:   sbx.Name,
		ClientID:    clientID,
		StartedAt:   startedAt(sbx).UTC(),
		EndAt:       endAt(sbx).UTC(),
		State:       stateOf(sbx),
		EnvdVersion: envdVersion,
		CPUCount:    int64(math.Ceil(float64(sbx.Spec.Resources.CPU.MilliValue()) / 1000)),
		MemoryMB:    sbx.Spec.Resources.Memory.Value() >> 20,
		DiskSizeMB:  sbx.Spec.Workspace.Size.Value() >> 20,
	}
	if raw := sbx.Annotations[AnnotationMetadata]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &d.Metadata)
	}
	return d
}

// ready says whether the Sandbox is Ready, and why not when it will not be without a change.
func ready(sbx *dsv1alpha1.Sandbox) (bool, string) {
	if c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return false, c.Message
	}
	c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= sbx.Generation, ""
}
