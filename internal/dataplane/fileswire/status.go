package fileswire

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StatusError is a failure as the Kubernetes API server reports one: a Status with a code and a message a
// person understands. The server answers with it; the client returns it for a refusal or a failed outcome.
type StatusError struct{ Status metav1.Status }

func (e *StatusError) Error() string { return e.Status.Message }
