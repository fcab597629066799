package dataplane

import (
	"encoding/json"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeStatus answers with a Kubernetes Status, as the API server would, so that kubectl and client-go print
// its message as they print their own errors.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, format string, args ...any) {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Code: int32(code), Reason: reason, Message: fmt.Sprintf(format, args...),
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(st)
}

// writeJSON answers 200 with v.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// writeSuccess answers 200 with a Status of Success, as the API server answers a call that returns no object.
func writeSuccess(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess, Code: http.StatusOK, Message: fmt.Sprintf(format, args...),
	})
}
