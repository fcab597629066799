package dataplane

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// authorize asks the API server whether c may verb the subresource of Sandbox ns/name in Group, with a
// SubjectAccessReview; "" means allowed, else the refusal in the API server's words. For exec the verb is
// create whatever the HTTP method (verbOf): a WebSocket exec arrives as a GET, and reading must never be
// enough to run a command (as kube-apiserver's AuthorizePodWebsocketUpgradeCreatePermission does for pods/exec).
func authorize(ctx context.Context, c client.Client, caller Caller, verb, ns, name, sub string) (string, error) {
	sar := review(caller, authorizationv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Group: Group, Version: Version, Resource: "sandboxes", Subresource: sub, Name: name,
	})
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

// peerDenied applies decision 0030 to a caller a peer agent passed on: never a cluster administrator, since a
// peer's word is all there is for who the caller is. "" means the caller is none.
func peerDenied(ctx context.Context, c client.Client, caller Caller) (string, error) {
	why, err := administrator(ctx, c, caller)
	if err != nil || why == "" {
		return "", err
	}
	return fmt.Sprintf("the agent of node %s passed on user %q, who %s: a call one agent forwards to another never acts as a cluster administrator (docs/design/decisions/0030-peers-are-nodes-and-never-pass-administrators.md)",
		caller.ForwardedBy, caller.Name, why), nil
}

// administrator says why caller is a cluster administrator, "" when it is not: in system:masters, which
// kube-apiserver allows everything without asking its authorizers, or allowed every verb on every resource in
// every namespace (cluster-admin and its like, through any group).
func administrator(ctx context.Context, c client.Client, caller Caller) (string, error) {
	if slices.Contains(caller.Groups, user.SystemPrivilegedGroup) {
		return "is in group " + user.SystemPrivilegedGroup, nil
	}
	sar := review(caller, authorizationv1.ResourceAttributes{Verb: "*", Group: "*", Resource: "*"})
	if err := c.Create(ctx, sar); err != nil {
		return "", fmt.Errorf("asking the API server whether %q is a cluster administrator: %w", caller.Name, err)
	}
	if sar.Status.Allowed {
		return "may do everything in the cluster", nil
	}
	return "", nil
}

// review is a SubjectAccessReview of caller for attrs.
func review(caller Caller, attrs authorizationv1.ResourceAttributes) *authorizationv1.SubjectAccessReview {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range caller.Extra {
		extra[k] = v
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: caller.Name, UID: caller.UID, Groups: caller.Groups, Extra: extra, ResourceAttributes: &attrs,
	}}
}
