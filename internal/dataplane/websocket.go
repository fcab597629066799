package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The WebSocket channel protocols served. v5 is what client-go's WebSocket executor (kubectl 1.30 and
// later) asks for: v4 and a CLOSE signal that ends stdin. kube-apiserver translates it to SPDY for the
// kubelet; an aggregated server is reached by it directly, so it speaks v5 itself. v4 is the Python client's.
const (
	v5Protocol       = "v5.channel.k8s.io"
	v4Protocol       = "v4.channel.k8s.io"
	v4Base64Protocol = "v4.base64.channel.k8s.io"
)

// Channels of the protocols, in order.
const (
	stdinChannel = iota
	stdoutChannel
	stderrChannel
	errorChannel
	resizeChannel
)

// serveWebSocketExec runs the command over a WebSocket: one channel per stream, the outcome as a Status
// on the error channel.
func serveWebSocketExec(w http.ResponseWriter, r *http.Request, e executor, container string, cmd []string, opts *remotecommand.Options) {
	readable := make([]bool, 5)
	readable[stdinChannel] = opts.Stdin
	readable[resizeChannel] = opts.TTY
	conn, err := openChannels(w, r, readable, streamIdleTimeout)
	if err != nil {
		return // openChannels has answered the client
	}
	defer conn.Close()
	// An empty message on the first output channel tells the client the streams are up.
	switch {
	case opts.Stdout:
		_, _ = conn.writer(stdoutChannel).Write(nil)
	case opts.Stderr:
		_, _ = conn.writer(stderrChannel).Write(nil)
	default:
		_, _ = conn.writer(errorChannel).Write(nil)
	}
	var in io.Reader
	var out, errOut io.WriteCloser
	if opts.Stdin {
		in = conn.reader(stdinChannel)
	}
	if opts.Stdout {
		out = conn.writer(stdoutChannel)
	}
	if opts.Stderr {
		errOut = conn.writer(stderrChannel)
	}
	// r's context ends with the connection (watchConnection in serveExec).
	ctx := r.Context()
	var sizes chan remotecommand.TerminalSize
	if opts.TTY {
		sizes = make(chan remotecommand.TerminalSize)
		go readSizes(ctx, conn.reader(resizeChannel), sizes)
	}
	err = e.ExecInContainer(ctx, "", "", container, cmd, in, out, errOut, opts.TTY, sizes, 0)
	_ = json.NewEncoder(conn.writer(errorChannel)).Encode(outcomeStatus(err))
}

// readSizes decodes the client's terminal sizes, one JSON object per message, until the channel ends.
func readSizes(ctx context.Context, r io.Reader, sizes chan<- remotecommand.TerminalSize) {
	dec := json.NewDecoder(r)
	for {
		var sz remotecommand.TerminalSize
		if err := dec.Decode(&sz); err != nil {
			return
		}
		select {
		case sizes <- sz:
		case <-ctx.Done():
			return
		}
	}
}

// outcomeStatus is the v4 protocols' report of how the command ended: Success, NonZeroExitCode with the
// code as an ExitCode cause (which clients turn into their exit code), or an internal error.
func outcomeStatus(err error) metav1.Status {
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return metav1.Status{Status: metav1.StatusSuccess}
	case errors.As(err, &exit) && exit.Exited():
		return metav1.Status{
			Status: metav1.StatusFailure, Reason: remotecommand.NonZeroExitCodeReason,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(exit.ExitStatus())}}},
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", err),
		}
	}
	return metav1.Status{
		Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError,
		Message: fmt.Sprintf("error executing command in container: %v", err),
	}
}
