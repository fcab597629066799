package main

import (
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dockside-dev/dockside/internal/supervision"
)

// TestInput: the command reads the bytes of supervision.StdinEnv and does not see the variable; without it,
// the supervisor's own input.
func TestInput(t *testing.T) {
	want := "print(6 * 7)\n\x00"
	in, env, err := input([]string{"A=1", supervision.StdinEnv + "=" + base64.StdEncoding.EncodeToString([]byte(want)), "B=2"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(in)
	if string(got) != want || len(env) != 2 || env[0] != "A=1" || env[1] != "B=2" {
		t.Errorf("input read %q with env %q; want %q with A and B only", got, env, want)
	}

	in, env, err = input([]string{"A=1"})
	if err != nil || in != os.Stdin || len(env) != 1 {
		t.Errorf("without the variable: input %v, env %q, error %v; want the supervisor's stdin and A", in, env, err)
	}

	if _, _, err := input([]string{supervision.StdinEnv + "=not base64!"}); err == nil {
		t.Error("input that is not base64 was taken")
	}
}

// TestRunKeepsOnlyItsOwnOutput: a run's folder planted beforehand (a result, a link where the output goes)
// is made anew, so what is read back is only what the run wrote.
func TestRunKeepsOnlyItsOwnOutput(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "run-1")
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cut"), []byte("99 99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, "stdout")); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{dir, "100", "30", "--", "sh", "-c", "echo real; exit 3"}); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "stdout"))
	cut, _ := os.ReadFile(filepath.Join(dir, "cut"))
	if string(out) != "real\n" || string(cut) != "0 0\n" {
		t.Errorf("kept stdout %q and cut %q; want \"real\\n\" and \"0 0\\n\"", out, cut)
	}
	if _, err := os.Lstat(elsewhere); err == nil {
		t.Error("the output went through the planted link")
	}
}
