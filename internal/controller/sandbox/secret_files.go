package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// Secret files (docs/design/containment.md, "Secret files"): a Sandbox's secretFiles live on a tmpfs volume of
// their own, mounted read-only in the primary at dsv1alpha1.SecretFilesDir. Before each start of the
// primary the agent reads the Secrets and copies the files in through a holder of their own, a second
// holder container that mounts only that volume, because a copy into a tmpfs volume that no running
// container holds is lost (see "Why the holder exists"). The workspace holder never mounts it, so that no
// Checkpoint, which copies out of the workspace holder, can reach the files. Once the primary has started
// it holds the volume itself and the secrets holder is removed: the files then last exactly as long as
// the primary runs.
const (
	// secretsHolderService tells the secrets holder apart from the workspace holder: both have the holder
	// role, which the deletion order and the sweeper already treat right.
	secretsHolderService = "secrets"
	// secretsHolderPath is where the secrets holder mounts the volume.
	secretsHolderPath = "/secrets"
	// secretFilesBytes is the size of the secrets volume: what the files' values may take in memory.
	secretFilesBytes = 1 << 20
	// tmpfsPage is what every file with content takes of a tmpfs at least.
	tmpfsPage = 4096
)

// EventSecretFilesWritten: the secret files of a start were written (its message names paths, never values).
const EventSecretFilesWritten = "SecretFilesWritten"

// secretsHolderName names the holder of the current generation's secret files; a roll makes a new one.
func (s *scope) secretsHolderName() string {
	return dd.Name(s.names().Owner(), dsv1alpha1.RoleHolder, secretsHolderService)
}

// secretsVolumeName names the secrets volume, kept for the Sandbox's life like the workspace: its content
// is gone anyway as soon as no running container holds it.
func (s *scope) secretsVolumeName() string {
	return dd.Name(s.names().WorkspaceOwner(), dsv1alpha1.RoleSecrets, "")
}

// secretFilesMounts is the primary's read-only mount of the secret files, when it has any.
func secretFilesMounts(s *scope) []dd.VolumeMount {
	if len(s.sbx.Spec.SecretFiles) == 0 {
		return nil
	}
	return []dd.VolumeMount{{Volume: s.secretsVolumeName(), Target: dsv1alpha1.SecretFilesDir, ReadOnly: true}}
}

// secretFilesFootprint is the memory the secret files may hold on the node. The secrets holder is not
// counted: it lives only while a start writes the files.
func secretFilesFootprint(spec dsv1alpha1.SandboxSpec) int64 {
	if len(spec.SecretFiles) == 0 {
		return 0
	}
	return secretFilesBytes
}

// ensureSecretFiles writes the Sandbox's secret files, with the values its Secrets hold now, before the
// primary of this topology generation starts: every pass of a start writes them again, so that a start
// that waited for services still gets them however its passes went. A missing Secret or key holds the
// Sandbox in Pending before anything of the start is made. Nothing here names a value.
func (r *Reconciler) ensureSecretFiles(ctx context.Context, s *scope) (bool, error) {
	if len(s.sbx.Spec.SecretFiles) == 0 || s.started() {
		return false, nil
	}
	values, err := r.readSecretFiles(ctx, s.sbx)
	var missing *missingSecretFileError
	if errors.As(err, &missing) {
		s.note(factAwaiting, dsv1alpha1.ReasonSecretNotFound, "%v", missing)
		s.after(r.Options.SpecRetry) // Secrets are not watched
		return true, nil
	}
	if err != nil {
		return s.fail(dsv1alpha1.ReasonSecretNotFound, "reading the Secrets of secretFiles", err)
	}
	if n := inMemory(values); n > secretFilesBytes {
		s.note(factAwaiting, dsv1alpha1.ReasonSecretFilesTooLarge,
			"the values of secretFiles take %d KiB in memory, more than the %d KiB their mount holds", n>>10, secretFilesBytes>>10)
		s.after(r.Options.SpecRetry)
		return true, nil
	}
	uid, gid, stop, err := r.primaryUser(ctx, s)
	if stop || err != nil {
		return stop, err
	}
	holder, made, stop, err := r.ensureSecretsHolder(ctx, s)
	if stop || err != nil {
		return stop, err
	}
	if err := r.Driver.CopyTo(ctx, holder, secretsHolderPath, bytes.NewReader(secretArchive(s.sbx.Spec.SecretFiles, values, uid, gid))); err != nil {
		return s.fail(dsv1alpha1.ReasonStartFailed, "writing the secret files", err)
	}
	if made {
		r.event(s.sbx, false, EventSecretFilesWritten, "Create", "%d secret files written under %s for topology generation %d",
			len(values), dsv1alpha1.SecretFilesDir, s.gen())
	}
	return false, nil
}

// missingSecretFileError says which Secret or key a secret file needs; it names no value.
type missingSecretFileError struct {
	file      dsv1alpha1.SecretFile
	noSecret  bool // the Secret itself does not exist, not only its key
	namespace string
}

func (e *missingSecretFileError) Error() string {
	if e.noSecret {
		return fmt.Sprintf("secret file %q needs Secret %q, which does not exist in namespace %s", e.file.Path, e.file.SecretName, e.namespace)
	}
	return fmt.Sprintf("secret file %q needs key %q of Secret %q, which the Secret does not hold", e.file.Path, e.file.Key, e.file.SecretName)
}

// readSecretFiles reads each file's value, in spec order, straight from the API server (never cached: the
// agent holds no copy of Secrets it does not use).
func (r *Reconciler) readSecretFiles(ctx context.Context, sbx *dsv1alpha1.Sandbox) ([][]byte, error) {
	secrets := map[string]*corev1.Secret{}
	values := make([][]byte, 0, len(sbx.Spec.SecretFiles))
	for _, f := range sbx.Spec.SecretFiles {
		secret, ok := secrets[f.SecretName]
		if !ok {
			secret = &corev1.Secret{}
			err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: sbx.Namespace, Name: f.SecretName}, secret)
			if apierrors.IsNotFound(err) {
				return nil, &missingSecretFileError{file: f, noSecret: true, namespace: sbx.Namespace}
			}
			if err != nil {
				return nil, fmt.Errorf("reading Secret %s: %w", f.SecretName, err)
			}
			secrets[f.SecretName] = secret
		}
		value, ok := secret.Data[f.Key]
		if !ok {
			return nil, &missingSecretFileError{file: f, namespace: sbx.Namespace}
		}
		values = append(values, value)
	}
	return values, nil
}

// inMemory is what the values take of a tmpfs: whole pages.
func inMemory(values [][]byte) int64 {
	var n int64
	for _, v := range values {
		n += (int64(len(v)) + tmpfsPage - 1) / tmpfsPage * tmpfsPage
	}
	return n
}

// primaryUser is the uid and gid the primary will run as (dd.RunAs), who alone may read the files. A group
// that is a name counts as the uid: files of mode 0400 grant the group nothing anyway.
func (r *Reconciler) primaryUser(ctx context.Context, s *scope) (int, int, bool, error) {
	img, err := r.Driver.InspectImage(ctx, s.sbx.Spec.Image)
	if err != nil {
		stop, err := s.fail(dsv1alpha1.ReasonImageFailed, "inspecting the image of the primary container", err)
		return 0, 0, stop, err
	}
	if !img.Exists { // removed from the node since ensureImages saw it: the next pass sees to it again
		s.note(factBuilding, dsv1alpha1.ReasonImageNotPresent, "the image of the primary container is no longer on node %s; looking again", r.Options.Node)
		s.after(status.StaleRetry)
		return 0, 0, true, nil
	}
	user, group, _ := strings.Cut(dd.RunAs(dd.ContainerSpec{RunAsRoot: s.sbx.Spec.RunAsRoot}, img.User), ":")
	uid, _ := strconv.Atoi(user) // RunAs gives a number
	gid, err := strconv.Atoi(group)
	if err != nil {
		gid = uid
	}
	return uid, gid, false, nil
}

// ensureSecretsHolder makes and starts the holder of this generation's secret files, with the volume; made
// says this call started it (the files it held before, if any, are gone).
func (r *Reconciler) ensureSecretsHolder(ctx context.Context, s *scope) (string, bool, bool, error) {
	name := s.secretsHolderName()
	holder := s.containers[name]
	if topology.Alive(holder) {
		return name, false, false, nil
	}
	if !holder.Exists {
		_, err := r.Driver.EnsureVolume(ctx, dd.VolumeSpec{
			Name: s.secretsVolumeName(), Owner: s.names().WorkspaceOwner(), Role: dsv1alpha1.RoleSecrets, SizeBytes: secretFilesBytes,
		})
		if err != nil {
			stop, err := s.fail(dsv1alpha1.ReasonStartFailed, "creating the volume of the secret files", err)
			return "", false, stop, err
		}
		if holder, err = r.Driver.EnsureContainer(ctx, dd.ContainerSpec{
			Name: name, Owner: s.names().Owner(), Role: dsv1alpha1.RoleHolder, Service: secretsHolderService,
			Image: r.Options.HolderImage, Resources: topology.HolderLimits,
			Mounts: []dd.VolumeMount{{Volume: s.secretsVolumeName(), Target: secretsHolderPath}},
		}); err != nil {
			stop, err := s.fail(dsv1alpha1.ReasonStartFailed, "creating the holder of the secret files", err)
			return "", false, stop, err
		}
	}
	if err := r.Driver.StartContainer(ctx, name); err != nil {
		stop, err := s.fail(dsv1alpha1.ReasonStartFailed, "starting the holder of the secret files", err)
		return "", false, stop, err
	}
	holder.State = dd.StateRunning
	s.containers[name] = holder
	return name, true, false, nil
}

// secretArchive is the tar stream of the files: each at its path, mode 0400 and owned by uid:gid, under
// directories of mode 0755 owned by root, which the primary may search but nobody may write (the mount is
// read-only in the primary, and only Docker writes through the secrets holder).
func secretArchive(files []dsv1alpha1.SecretFile, values [][]byte, uid, gid int) []byte {
	now := time.Now()
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	slices.Sort(sorted) // a parent sorts before its children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// Writes into a bytes.Buffer cannot fail, and the CRD admits only names a tar header holds.
	for _, d := range sorted {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: now})
	}
	for i, f := range files {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o400, Uid: uid, Gid: gid, Size: int64(len(values[i])), ModTime: now})
		_, _ = tw.Write(values[i])
	}
	_ = tw.Close()
	return buf.Bytes()
}
