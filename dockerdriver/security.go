package dockerdriver

import "strings"

// SecurityInfo is the confinement the daemon applies on its own to every container, as docker info's
// SecurityOptions lists it (for example "name=seccomp,profile=builtin", "name=apparmor").
type SecurityInfo struct {
	Options []string
}

// Seccomp tells whether the daemon filters the system calls of containers that name no seccomp profile
// (Dockside's never name one, so the daemon's default is what every container gets), and with which
// profile. A daemon started with --seccomp-profile=unconfined lists seccomp with profile "unconfined",
// which filters nothing; one built or running without seccomp does not list it at all.
func (s SecurityInfo) Seccomp() (profile string, on bool) {
	for _, opt := range s.Options {
		fields := map[string]string{}
		for _, kv := range strings.Split(opt, ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		if fields["name"] != "seccomp" {
			continue
		}
		return fields["profile"], fields["profile"] != "unconfined"
	}
	return "", false
}
