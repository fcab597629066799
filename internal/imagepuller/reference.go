package imagepuller

import "strings"

// dockerHub is the registry of references that name none.
const dockerHub = "docker.io"

var dockerHubAliases = map[string]bool{"docker.io": true, "index.docker.io": true, "registry-1.docker.io": true}

// Repository is the repository an image reference pulls from, registry included and without tag or digest,
// by Docker's rule: a first path component with a '.' or a ':', or localhost, names the registry; otherwise
// it is Docker Hub, whose one-component names are under library/ ("busybox" is docker.io/library/busybox).
// The registry is lower-cased, and Docker Hub's other names made docker.io.
func Repository(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if slash := strings.LastIndex(name, "/"); strings.LastIndex(name, ":") > slash {
		name = name[:strings.LastIndex(name, ":")]
	}
	first, rest, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		first, rest = dockerHub, name
	}
	first = strings.ToLower(first)
	if dockerHubAliases[first] {
		first = dockerHub
		if !strings.Contains(rest, "/") {
			rest = "library/" + rest
		}
	}
	return first + "/" + rest
}

// Registry is the host[:port] of the registry a reference pulls from.
func Registry(ref string) string {
	registry, _, _ := strings.Cut(Repository(ref), "/")
	return registry
}

// RegistryHost is the host[:port] of a registry as credentials name it ("https://index.docker.io/v1/",
// "registry.example:5000"), with Docker Hub's names made one.
func RegistryHost(server string) string {
	host := strings.TrimPrefix(strings.TrimPrefix(strings.ToLower(server), "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	if dockerHubAliases[host] {
		return dockerHub
	}
	return host
}
