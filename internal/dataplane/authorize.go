package dataplane

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// authorize asks the API server whether c may verb the subresource of Sandbox ns/name in Group, with a
// SubjectAccessReview; "" means allowed, else the refusal in the API server's words. For exec the verb is
// create whatever the HTTP method (verbOf): a WebSocket exec arrives as a GET, and reading must never be
// enough to run a command (as kube-apiserver's AuthorizePodWebsocketUpgradeCreatePermission does for pods/exec).
func authorize(ctx context.Context, c client.Client, caller Caller, verb, ns, name, sub string) (string, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range caller.Extra {
		extra[k] = v
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: caller.Name, UID: caller.UID, Groups: caller.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Group: Group, Version: Version, Resource: "sandboxes", Subresource: sub, Name: name,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		return "", fmt.Errorf("asking the API server whether %q may %s sandboxes/%s: %w", caller.Name, verb, sub, err)
	}
	if sar.Status.Allowed {
		return "", nil
	}
	msg := fmt.Sprintf("sandboxes.%s %q is forbidden: User %q cannot %s resource \"sandboxes/%s\" in API group %q in the namespace %q",
		Group, name, caller.Name, verb, sub, Group, ns)
	if sar.Status.Reason != "" {
		msg += ": " + sar.Status.Reason
	}
	return msg, nil
}
