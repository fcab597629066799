package dataplane

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Discovery is what the aggregator and kubectl read to learn the group: the group, its one version, and the
// Sandbox subresources it serves (as kube-apiserver lists pods/exec). It is the same for every caller and
// names nothing private, so it is served to any caller the listener admits (see serveDiscovery).
var (
	groupVersionForDiscovery = metav1.GroupVersionForDiscovery{GroupVersion: GroupVersion.String(), Version: Version}
	apiGroup                 = metav1.APIGroup{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name:     Group, Versions: []metav1.GroupVersionForDiscovery{groupVersionForDiscovery},
		PreferredVersion: groupVersionForDiscovery,
	}
	apiResources = metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: GroupVersion.String(),
		APIResources: []metav1.APIResource{
			subresource(Exec), subresource(Files), subresource(PortForward), subresource(Processes),
		},
	}
)

// subresource lists sandboxes/<name>: get and create, as pods/exec has them (a WebSocket client GETs, SPDY POSTs).
func subresource(name string) metav1.APIResource {
	return metav1.APIResource{Name: "sandboxes/" + name, Namespaced: true, Kind: "Sandbox", Verbs: metav1.Verbs{"get", "create"}}
}

// serveDiscovery answers the discovery paths and reports whether path was one.
func serveDiscovery(w http.ResponseWriter, path string) bool {
	switch path {
	case "/apis", "/apis/":
		writeJSON(w, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{apiGroup}})
	case "/apis/" + Group, "/apis/" + Group + "/":
		writeJSON(w, apiGroup)
	case "/apis/" + GroupVersion.String(), "/apis/" + GroupVersion.String() + "/":
		writeJSON(w, apiResources)
	default:
		return false
	}
	return true
}
