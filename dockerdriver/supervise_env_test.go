package dockerdriver

import (
	"encoding/base64"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/dockside-dev/dockside/internal/supervision"
)

// TestSupervisorEnv: the command's input rides in the exec's environment, base64-encoded, and a variable of
// the command's own by that name cannot pass for it.
func TestSupervisorEnv(t *testing.T) {
	g := NewWithT(t)
	env := []EnvVar{{Name: "A", Value: "1"}, {Name: supervision.StdinEnv, Value: "forged"}}
	in := []byte("print(6 * 7)\n\x00")

	g.Expect(supervisorEnv(ExecRequest{Env: env})).To(Equal([]string{"A=1"}))
	g.Expect(supervisorEnv(ExecRequest{Env: env, Stdin: in})).To(Equal([]string{
		"A=1", supervision.StdinEnv + "=" + base64.StdEncoding.EncodeToString(in)}))
	g.Expect(supervisorEnv(ExecRequest{Stdin: []byte{}})).To(Equal([]string{supervision.StdinEnv + "="}), "empty input is input")
	g.Expect(env).To(HaveLen(2), "the request's env is left as it was")
}
