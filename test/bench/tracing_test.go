package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"
)

const (
	tracingStarts = 20              // session Sandboxes each agent starts, in turns
	tracingPool   = "10.120.0.0/16" // the traced agent's topology pool, apart from every other agent's here
)

// tracedNode names the second agent of the tracing benchmark, the one that traces.
func tracedNode() string { return runNode + "-traced" }

// BenchmarkTracing times apply → Ready of session Sandboxes on two agents of the same build on this machine's
// Docker, in turns: one sending its traces to an OTLP receiver of the benchmark's own on 127.0.0.1
// (docs/tracing.md), the other (the shared env's) with tracing off. Each Sandbox is pinned to its agent.
func BenchmarkTracing(b *testing.B) {
	e := dockerEnv(b)
	ctx := context.Background()
	receiver := otlpReceiver(b)
	traced := func(node, kubeconfig, metricsAddr string, capacity int) *exec.Cmd {
		cmd := realAgent(node, kubeconfig, metricsAddr, capacity)
		cmd.Args = append(cmd.Args, "--topology-pool="+tracingPool)
		cmd.Env = append(cmd.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+receiver.addr)
		return cmd
	}
	agent, err := e.startAgent(ctx, runDir, tracedNode(), 64, traced)
	if err != nil {
		b.Fatal(err)
	}
	// Stopped before the benchmarks after this one, whose unbound Sandboxes it would otherwise take.
	defer func() {
		if err := agent.Stop(); err != nil {
			b.Error(err)
		}
	}()
	ns, err := e.namespace(ctx, "tracing")
	if err != nil {
		b.Fatal(err)
	}
	// The traced agent's first Sandbox, uncounted, as the shared agent's was (warmUp).
	warm := session(ns, "warmup")
	warm.Spec.NodeName = tracedNode()
	if _, err := e.applyAndWait(ctx, warm); err != nil {
		b.Fatalf("%v\n%s", err, agent.LogTail())
	}
	var on, off []time.Duration
	for i := range tracingStarts {
		for turn := range 2 {
			tracing := (i+turn)%2 == 0 // alternate which goes first
			sbx := session(ns, fmt.Sprintf("off-%d", i))
			sbx.Spec.NodeName = e.node
			if tracing {
				sbx = session(ns, fmt.Sprintf("on-%d", i))
				sbx.Spec.NodeName = tracedNode()
			}
			d, err := e.applyAndWait(ctx, sbx)
			if err != nil {
				b.Fatalf("%v\n%s", err, agent.LogTail())
			}
			if tracing {
				on = append(on, d)
			} else {
				off = append(off, d)
			}
		}
	}
	cleanUp(b, e, ns)
	// The agent sends its spans every 5 s (the SDK's default): a run in which none arrived measured nothing.
	for deadline := time.Now().Add(30 * time.Second); receiver.exports.Load() == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("the traced agent sent no spans to the receiver")
		}
	}
	record(b, group{
		Key: "tracing", Title: fmt.Sprintf("Cold start with tracing on (OTLP to a receiver on 127.0.0.1), session Sandbox, %d one at a time", tracingStarts),
		Baseline: "a second agent of the same build with tracing off, in turns in the same run",
		Figures: []figure{
			{Name: "p50", Unit: "s", Dockside: seconds(percentile(on, 50)), Baseline: seconds(percentile(off, 50)), Goal: "≤ 1.05x tracing off"},
			{Name: "p95", Unit: "s", Dockside: seconds(percentile(on, 95)), Baseline: seconds(percentile(off, 95))},
			{Name: "OTLP exports received", Unit: "requests", Dockside: num(float64(receiver.exports.Load())),
				Note: fmt.Sprintf("%d bytes", receiver.bytes.Load())},
		},
	})
}

// receiver is an OTLP/HTTP traces endpoint that takes every export, keeps count and answers success.
type receiver struct {
	addr           string
	exports, bytes atomic.Int64
}

func otlpReceiver(b *testing.B) *receiver {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := &receiver{addr: l.Addr().String()}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n, _ := io.Copy(io.Discard, req.Body)
		if req.URL.Path == "/v1/traces" {
			r.exports.Add(1)
			r.bytes.Add(n)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse: everything accepted
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return r
}
