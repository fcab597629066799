package v1alpha1

// SecretFilesDir is where a Sandbox's secretFiles appear in its primary container: a memory-backed mount,
// read-only there, that holds nothing but those files.
const SecretFilesDir = "/run/secrets/dockside"

// MaxSecretFiles is the most secretFiles one Sandbox may have (mirrors the MaxItems marker on secretFiles).
const MaxSecretFiles = 16

// ReasonSecretFilesTooLarge: the values of the Sandbox's secretFiles do not fit the memory their mount
// holds; nothing of the start is built, and the Secrets are read again later (they are not watched).
const ReasonSecretFilesTooLarge = "SecretFilesTooLarge"

// SecretFile puts one key of a Secret in the Sandbox's namespace into a file of the primary container, at
// SecretFilesDir/path. The file is written before the primary starts, readable by the container's user only
// (mode 0400), on a memory-backed mount; its value appears nowhere in the container's configuration, its
// environment or the Sandbox's status.
type SecretFile struct {
	// secretName names the Secret, in the Sandbox's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="secretFiles secretName must be a DNS subdomain: lowercase letters, digits, '-' and '.'"
	// +required
	SecretName string `json:"secretName"`

	// key inside the Secret's data whose value is the file's content.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="secretFiles key may hold only letters, digits, '-', '_' and '.'"
	// +required
	Key string `json:"key"`

	// path of the file relative to /run/secrets/dockside, like token or aws/credentials: names of letters,
	// digits, '.', '_' and '-' separated by single '/', none of them '.' or '..'.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="secretFiles path must be relative to /run/secrets/dockside, like token or aws/credentials, not absolute"
	// +kubebuilder:validation:XValidation:rule="!('/' + self + '/').contains('/../') && !('/' + self + '/').contains('/./')",message="secretFiles path must not contain '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$')",message="secretFiles path may hold only letters, digits, '.', '_' and '-', in names separated by single '/', without a trailing '/'"
	// +required
	Path string `json:"path"`
}
