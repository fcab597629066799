package dockerdriver

import (
	"strconv"
	"strings"
)

// NonRootUser is the uid:gid a container runs as when its image would run it as root. 65532 is the
// "nonroot" user of distroless images: above the ranges distributions give system (below 1000) and login
// users (1000 to 60000), and not 65534 (nobody), which owns what NFS and user namespaces cannot map. So it
// owns no file of an image by chance, and a file it can write is one that lets everybody write.
const NonRootUser = "65532:65532"

// RootUser is what a container asking for root (ContainerSpec.RunAsRoot) runs as.
const RootUser = "0:0"

// RunAs is the user a container runs as, given the USER its image declares: root only when the spec asks
// for it, the image's own USER when it names a non-zero numeric uid, and NonRootUser otherwise. That
// otherwise covers root, an unset USER, and any name: a name is looked up in the image's /etc/passwd only
// when the container starts, where it may well be uid 0, and only a number can be checked without reading
// the image's files.
func RunAs(spec ContainerSpec, imageUser string) string {
	if spec.RunAsRoot {
		return RootUser
	}
	if nonRootUID(imageUser) {
		return imageUser
	}
	return NonRootUser
}

// nonRootUID tells whether a USER of the form uid[:group] names a numeric uid other than 0.
func nonRootUID(user string) bool {
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.ParseUint(uid, 10, 32)
	return err == nil && n != 0
}
