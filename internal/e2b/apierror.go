package e2b

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// apiError is an answer in E2B's error shape, {code, message}, with code the HTTP status as E2B sends it.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// fromAPI turns an error of the Kubernetes API into E2B's shape, keeping the API server's code and words:
// what Dockside refuses (RBAC, validation, a missing object) reaches the SDK as it was said.
func fromAPI(err error, what string) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		code := int(st.Code)
		if code == 0 {
			code = http.StatusInternalServerError
		}
		if apierrors.IsNotFound(err) {
			return errorf(http.StatusNotFound, "%s not found", what)
		}
		return errorf(code, "%s: %s", what, st.Message)
	}
	return errorf(http.StatusBadGateway, "%s: %v", what, err)
}

// writeJSON answers v with code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers err in E2B's shape.
func writeError(w http.ResponseWriter, err error) {
	ae := fromAPI(err, "request")
	writeJSON(w, ae.Code, ae)
}

// notSupported is the answer of an endpoint of E2B's API that the gateway does not serve (docs/e2b.md, "Not
// served yet").
func notSupported(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotImplemented, errorf(http.StatusNotImplemented, "%s %s is not supported by Dockside's E2B gateway", r.Method, r.URL.Path))
}
