package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/checkpointregistry"
	"github.com/dockside-dev/dockside/internal/testutil/memregistry"
)

// The checkpoint registry benchmark runs two agents on this machine's Docker, nodes A and B, on a control plane
// of their own, both storing Checkpoints in an OCI registry the benchmark serves on 127.0.0.1 (go-containerregistry's
// in-memory registry, internal/testutil/memregistry), each with a topology pool of its own apart from every other
// agent's.
const (
	registryPoolA = "10.127.0.0/17"
	registryPoolB = "10.127.128.0/17"
)

func registryNode(which string) string { return runNode + "-reg" + which }

// registryAgent is the real agent binary with the registry repo (plain HTTP: it is on loopback), its
// Checkpoint store under dir and the topology pool pool.
func registryAgent(dir, repo, pool string) agentCommand {
	return func(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
		cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
		cmd.Args = append(cmd.Args, "--checkpoint-dir="+filepath.Join(dir, "checkpoints"), "--topology-pool="+pool,
			"--checkpoint-registry="+repo, "--checkpoint-registry-plain-http")
		return cmd
	}
}

// BenchmarkCheckpointRegistry captures a Sandbox's workspace holding checkpointMiB of random data on node A,
// which pushes the archive to the registry, pulls the artifact to a local file with the agent's registry client,
// and restores the Checkpoint into a Sandbox bound to node B, which pulls it, against `docker cp` of the same
// data out of the Sandbox's container to a local file (a tar stream) and of that file into a plain container's
// tmpfs volume. The bytes restored on B are compared with the originals.
func BenchmarkCheckpointRegistry(b *testing.B) {
	ctx := context.Background()
	dir := filepath.Join(runDir, "registry")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	repo := serveRegistry(b)
	e, err := startEnv(ctx, dir, registryNode("a"), 4, registryAgent(dir, repo, registryPoolA))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.stopClean(); err != nil {
			b.Error(err)
		}
	}()
	nodeB, err := e.startAgent(ctx, dir, registryNode("b"), 4, registryAgent(dir, repo, registryPoolB))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := nodeB.Stop(); err != nil {
			b.Error(err)
		}
	}()
	ns, err := e.namespace(ctx, "ckreg")
	if err != nil {
		b.Fatal(err)
	}
	// Deleted while node B's agent still runs (defers run last in, first out).
	defer cleanUp(b, e, ns)

	source := session(ns, "source")
	source.Spec.NodeName = e.node
	if _, err := e.applyAndWait(ctx, source); err != nil {
		b.Fatal(err)
	}
	primary, want, err := e.fillWorkspace(ctx, source)
	if err != nil {
		b.Fatal(err)
	}

	tarFile := filepath.Join(dir, "docker-cp.tar")
	copyOut, err := timed(func() error { return dockerCpOut(primary+":/workspace/.", tarFile) })
	if err != nil {
		b.Fatal(err)
	}
	ckpt, pushed, err := e.capture(ctx, ns, source.Name)
	if err != nil {
		b.Fatal(err)
	}
	pulled, err := timed(func() error {
		return pullToFile(ctx, repo, string(ckpt.UID), archive.Archive{Digest: ckpt.Status.Digest, Size: ckpt.Status.SizeBytes}, filepath.Join(dir, "pulled.tar"))
	})
	if err != nil {
		b.Fatal(err)
	}

	moved := session(ns, "moved")
	moved.Spec.NodeName, moved.Spec.RestoreFrom = registryNode("b"), ckpt.Name
	restoredIn, err := e.restore(ctx, moved)
	if err != nil {
		b.Fatal(err, "\n", nodeB.LogTail())
	}
	got, err := docker("exec", moved.Status.ContainerID, "sha256sum", "/workspace/data")
	if err != nil || got != want {
		b.Fatalf("the workspace restored on node B differs from the one captured on node A: %q, want %q (%v)", got, want, err)
	}
	restoreByHand, err := timed(func() error {
		plain, err := plainWorkspace(e.node)
		if err != nil {
			return err
		}
		return dockerCpIn(tarFile, plain+":/workspace")
	})
	if err != nil {
		b.Fatal(err)
	}

	record(b, group{
		Key:      "checkpoint-registry",
		Title:    fmt.Sprintf("Checkpoint through an OCI registry on 127.0.0.1 (in-memory, plain HTTP), a workspace of %d MiB of random data, captured on node A and restored on node B (two agents on this machine's Docker)", checkpointMiB),
		Baseline: "docker cp of the same data out of the Sandbox's container to a local file (a tar stream), and of that file into a plain container's tmpfs volume",
		Figures: []figure{
			{Name: "capture + push, apply → Ready", Unit: "s", Dockside: seconds(pushed), Baseline: seconds(copyOut)},
			{Name: "capture + push throughput", Unit: "MB/s", Dockside: throughput(pushed), Baseline: throughput(copyOut)},
			{Name: "capture + push, status.captureDuration", Unit: "s", Dockside: durationOf(ckpt.Status.CaptureDuration), Note: "the push included"},
			{Name: "Sandbox frozen, status.frozenDuration", Unit: "s", Dockside: durationOf(ckpt.Status.FrozenDuration), Note: "the push runs after the thaw"},
			{Name: "pull of the artifact to a local file", Unit: "MB/s", Dockside: throughput(pulled), Baseline: throughput(copyOut),
				Note: "the agent's registry client run by the benchmark, digest checked"},
			{Name: "restore on node B (pull, unpack, start), apply → Ready", Unit: "s", Dockside: seconds(restoredIn), Baseline: seconds(restoreByHand),
				Note: "baseline: a tmpfs volume, a container mounting it, docker cp of the file in"},
			{Name: "restore on node B throughput, start included", Unit: "MB/s", Dockside: throughput(restoredIn), Baseline: throughput(restoreByHand)},
		},
	})
}

// serveRegistry serves an in-memory OCI registry on 127.0.0.1 until the benchmark ends and names the
// repository the agents keep Checkpoints in.
func serveRegistry(b *testing.B) string {
	b.Helper()
	srv, err := memregistry.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	return srv.Repo()
}

// pullToFile pulls the Checkpoint uid's archive a from repo into a new file at path, as an agent does, digest
// checked.
func pullToFile(ctx context.Context, repo, uid string, a archive.Archive, path string) error {
	r, err := checkpointregistry.New(repo, checkpointregistry.Options{PlainHTTP: true})
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := r.Pull(ctx, uid, a, f); err != nil {
		return err
	}
	return f.Sync()
}

// dockerCpOut is `docker cp src - > file`: the tar stream of src written to a local file, synced.
func dockerCpOut(src, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command("docker", "cp", src, "-")
	cmd.Stdout = f
	if out, err := stderrOf(cmd); err != nil {
		return fmt.Errorf("docker cp %s -: %w: %s", src, err, out)
	}
	return f.Sync()
}

// dockerCpIn is `docker cp - dst < file`: a tar stream from a local file unpacked into dst.
func dockerCpIn(file, dst string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command("docker", "cp", "-", dst)
	cmd.Stdin = f
	if out, err := stderrOf(cmd); err != nil {
		return fmt.Errorf("docker cp - %s: %w: %s", dst, err, out)
	}
	return nil
}

// stderrOf runs cmd and returns what it wrote to stderr.
func stderrOf(cmd *exec.Cmd) (string, error) {
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	return strings.TrimSpace(stderr.String()), err
}
