package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/test/internal/agentproc"
)

// pythonRounds is how many times the command runs through each of the three paths.
const pythonRounds = 20

// BenchmarkPythonClient times the Python client's Sandbox.run(record=True) (clients/python) round trip of a
// one-line Python print, an Execution, against `kubectl dockside run` (an Execution too) and `docker exec` of
// the same command in the same Sandbox, in turns. The Python process is started once and attached once, as a framework holds its client; the plugin
// is a new process each time, as a person or a script runs it.
func BenchmarkPythonClient(b *testing.B) {
	e, ns := benchNamespace(b, "python-client")
	ctx := context.Background()
	sbx := session(ns, "py")
	sbx.Spec.Image = "dockside.dev/python:local"
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	command := []string{"python3", "-c", "print(6 * 7)"}
	const want = "42\n"

	rounds, err := startPythonRounds(e.cp.Kubeconfig, "record", ns, sbx.Name, want, command)
	if err != nil {
		b.Fatal(err)
	}
	defer rounds.close()
	var viaPython, viaPlugin, viaDocker []time.Duration
	for range pythonRounds {
		d, err := rounds.next()
		if err != nil {
			b.Fatal(err)
		}
		p, err := timed(func() error { return pluginExec(e.cp.KubectlPath, e.cp.Kubeconfig, ns, sbx.Name, want, command) })
		if err != nil {
			b.Fatal(err)
		}
		x, err := timed(func() error {
			_, err := docker(append([]string{"exec", sbx.Status.ContainerID}, command...)...)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		viaPython, viaPlugin, viaDocker = append(viaPython, d), append(viaPlugin, p), append(viaDocker, x)
	}
	title := fmt.Sprintf("Python client Sandbox.run(record=True) of a one-line Python print, %d one after another", pythonRounds)
	record(b, group{Key: "python-run-record-vs-docker", Title: title,
		Baseline: "docker exec of the same command in the Sandbox's container",
		Figures:  startupFigures(viaPython, viaDocker, "")})
	record(b, group{Key: "python-run-record-vs-plugin", Title: title,
		Baseline: "kubectl dockside run of the same command (a new process each time)",
		Figures:  startupFigures(viaPython, viaPlugin, "")})
}

// BenchmarkPythonStreamed times the Python client's data plane calls, in turns with `docker exec` in the same
// Sandbox: Sandbox.run (its default path) and sbx.commands.run of a one-line Python print (one exec stream
// each) against docker exec of the same command, and sbx.run_code of `1+1` in the interpreter (docs/design/interpreter.md), started once before the
// rounds, against docker exec of `python3 -c 'print(1+1)'`, what a fresh interpreter costs. The image is the
// python image with the interpreter: DOCKSIDE_PYTHON_IMAGE, else dockside.dev/python:local.
func BenchmarkPythonStreamed(b *testing.B) {
	e, ns := benchNamespace(b, "python-streamed")
	ctx := context.Background()
	sbx := session(ns, "py")
	sbx.Spec.Image = "dockside.dev/python:local"
	if image := os.Getenv("DOCKSIDE_PYTHON_IMAGE"); image != "" {
		sbx.Spec.Image = image
	}
	if err := e.applyAndRead(ctx, sbx); err != nil {
		b.Fatal(err)
	}
	command := []string{"python3", "-c", "print(6 * 7)"}
	viaRun, viaDockerRun, err := pythonAgainstDocker(e, "run", ns, sbx, "42\n", command, command)
	if err != nil {
		b.Fatal(err)
	}
	viaCommands, viaDocker, err := pythonAgainstDocker(e, "commands", ns, sbx, "42\n", command, command)
	if err != nil {
		b.Fatal(err)
	}
	viaCode, viaFresh, err := pythonAgainstDocker(e, "code", ns, sbx, "2", []string{"1+1"},
		[]string{"python3", "-c", "print(1+1)"})
	if err != nil {
		b.Fatal(err)
	}
	record(b, group{Key: "python-run-vs-docker",
		Title:    fmt.Sprintf("Python client Sandbox.run of a one-line Python print, %d one after another", pythonRounds),
		Baseline: "docker exec of the same command in the Sandbox's container",
		Figures:  startupFigures(viaRun, viaDockerRun, "≤ 1.3x docker exec")})
	record(b, group{Key: "python-commands-vs-docker",
		Title:    fmt.Sprintf("Python client sbx.commands.run of a one-line Python print, %d one after another", pythonRounds),
		Baseline: "docker exec of the same command in the Sandbox's container",
		Figures:  startupFigures(viaCommands, viaDocker, "≤ 1.3x docker exec")})
	record(b, group{Key: "python-run-code-vs-docker",
		Title:    fmt.Sprintf("Python client sbx.run_code of 1+1 in the interpreter, %d one after another", pythonRounds),
		Baseline: "docker exec of python3 -c 'print(1+1)' (a fresh interpreter) in the Sandbox's container",
		Figures:  startupFigures(viaCode, viaFresh, "")})
}

// pythonAgainstDocker alternates pythonRounds rounds of run_rounds.py in mode with docker exec of dockerCmd,
// after one uncounted round of each (the client's first exec, the interpreter's start).
func pythonAgainstDocker(e *env, mode, ns string, sbx *dsv1alpha1.Sandbox, want string, command, dockerCmd []string) (viaPython, viaDocker []time.Duration, err error) {
	rounds, err := startPythonRounds(e.cp.Kubeconfig, mode, ns, sbx.Name, want, command)
	if err != nil {
		return nil, nil, err
	}
	defer rounds.close()
	for i := range pythonRounds + 1 {
		d, err := rounds.next()
		if err != nil {
			return nil, nil, err
		}
		x, err := timed(func() error {
			_, err := docker(append([]string{"exec", sbx.Status.ContainerID}, dockerCmd...)...)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			viaPython, viaDocker = append(viaPython, d), append(viaDocker, x)
		}
	}
	return viaPython, viaDocker, nil
}

// pythonRoundsProc is clients/python/bench/run_rounds.py running: each line written to it runs the command once.
type pythonRoundsProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr *bytes.Buffer
}

// pythonBench is the command that runs clients/python/bench/<script> with args against kubeconfig's API
// server, with DOCKSIDE_PYTHON's interpreter, else Debian's python3.
func pythonBench(kubeconfig, script string, args ...string) *exec.Cmd {
	python := os.Getenv("DOCKSIDE_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	cmd := exec.Command(python, append([]string{filepath.Join("..", "..", "clients", "python", "bench", script)}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PYTHONDONTWRITEBYTECODE=1")
	return cmd
}

// startPythonRounds starts run_rounds.py in mode (run, commands or code) against the Sandbox.
func startPythonRounds(kubeconfig, mode, ns, sandbox, want string, command []string) (*pythonRoundsProc, error) {
	cmd := pythonBench(kubeconfig, "run_rounds.py", append([]string{mode, ns, sandbox, want, "--"}, command...)...)
	p := &pythonRoundsProc{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.stdout = bufio.NewScanner(out)
	return p, cmd.Start()
}

// next runs one round and returns the round trip the client measured.
func (p *pythonRoundsProc) next() (time.Duration, error) {
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		return 0, fmt.Errorf("run_rounds.py: %w: %s", err, p.stderr)
	}
	if !p.stdout.Scan() {
		return 0, fmt.Errorf("run_rounds.py ended: %s", p.stderr)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(p.stdout.Text()), 64)
	return time.Duration(secs * float64(time.Second)), err
}

func (p *pythonRoundsProc) close() {
	_ = p.stdin.Close()
	_ = p.cmd.Wait()
}

// pluginExec runs `kubectl dockside run` (an Execution) as a user does, kubectl finding the plugin on the PATH.
func pluginExec(kubectl, kubeconfig, ns, sandbox, want string, command []string) error {
	bin, err := filepath.Abs(agentproc.BinDir())
	if err != nil {
		return err
	}
	cmd := exec.Command(kubectl, append([]string{"dockside", "run", "-n", ns, sandbox, "--"}, command...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("kubectl dockside run: %w", err)
	}
	if string(out) != want {
		return fmt.Errorf("kubectl dockside run printed %q, want %q", out, want)
	}
	return nil
}
