package checkpointregistry

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

// dockerConfig is the content of a kubernetes.io/dockerconfigjson Secret's .dockerconfigjson key.
type dockerConfig struct {
	Auths map[string]struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Auth     string `json:"auth"` // base64 of username:password
	} `json:"auths"`
}

// AuthFromDockerConfig finds, in a .dockerconfigjson, the credentials of repository's registry (keyed by
// its host[:port], with or without a scheme). None there is an error: a Secret was named for a reason.
func AuthFromDockerConfig(raw []byte, repository string) (authn.Authenticator, error) {
	var cfg dockerConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("not a .dockerconfigjson: %w", err)
	}
	repo, err := name.NewRepository(repository)
	if err != nil {
		return nil, fmt.Errorf("checkpoint registry %q: %w", repository, err)
	}
	host := repo.RegistryStr()
	for key, a := range cfg.Auths {
		if hostOf(key) != host {
			continue
		}
		user, pass := a.Username, a.Password
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("the auth of %s is not base64: %w", key, err)
			}
			var ok bool
			if user, pass, ok = strings.Cut(string(dec), ":"); !ok {
				return nil, fmt.Errorf("the auth of %s is not username:password", key)
			}
		}
		return authn.FromConfig(authn.AuthConfig{Username: user, Password: pass}), nil
	}
	return nil, fmt.Errorf("it holds no credentials for %s", host)
}

// hostOf strips a scheme and a path from a .dockerconfigjson key.
func hostOf(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return host
}
