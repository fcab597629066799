//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver of the suite's own on the host's loopback: every agent the suite
// starts sends its spans there (docs/tracing.md), so that a spec can read the span tree of what it did, and
// check what every span of the run carried.
type collector struct {
	server *http.Server
	addr   string

	mu       sync.Mutex
	spans    []*tracepb.Span
	requests []*collectortrace.ExportTraceServiceRequest // every one received, for the search of forbidden values
}

// startCollector listens on a free loopback port; its stop is registered with the suite.
func startCollector() *collector {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	c := &collector{addr: l.Addr().String()}
	c.server = &http.Server{Handler: http.HandlerFunc(c.receive)}
	go func() { _ = c.server.Serve(l) }()
	return c
}

// env is what tells an agent to send its spans here: the standard variables, with a short batching delay so
// that spans arrive soon after they end.
func (c *collector) env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + c.addr, "OTEL_BSP_SCHEDULE_DELAY=200"}
}

func (c *collector) stop() { _ = c.server.Close() }

// receive takes one OTLP/HTTP export request (protobuf, optionally gzipped), as the specification has it.
func (c *collector) receive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "only POST /v1/traces", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.requests = append(c.requests, &req)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// trace is every span received so far of one trace.
func (c *collector) trace(traceID []byte) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found []*tracepb.Span
	for _, s := range c.spans {
		if bytes.Equal(s.TraceId, traceID) {
			found = append(found, s)
		}
	}
	return found
}

// spanCount is how many spans have arrived.
func (c *collector) spanCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.spans)
}

// leaks lists each forbidden value found anywhere in what the agents sent: the resource, a span's attribute
// (named) or any other part of a span (its name, events, status, links).
func (c *collector) leaks(forbidden []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found []string
	in := func(m proto.Message) []string {
		data, _ := proto.Marshal(m)
		var hit []string
		for _, f := range forbidden {
			if bytes.Contains(data, []byte(f)) {
				hit = append(hit, f)
			}
		}
		return hit
	}
	for _, req := range c.requests {
		for _, rs := range req.ResourceSpans {
			for _, f := range in(rs.Resource) {
				found = append(found, fmt.Sprintf("%q in the resource", f))
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					for _, f := range in(s) {
						found = append(found, fmt.Sprintf("%q in span %s%s", f, s.Name, keysHolding(s, f)))
					}
				}
			}
		}
	}
	return found
}

// keysHolding names the attributes of s whose value holds f.
func keysHolding(s *tracepb.Span, f string) string {
	var keys []string
	for _, kv := range s.Attributes {
		if data, _ := proto.Marshal(kv.Value); bytes.Contains(data, []byte(f)) {
			keys = append(keys, kv.Key)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return ", attributes " + strings.Join(keys, ", ")
}

// spanTree is one trace's spans by ID, for walking up from a span to its root.
type spanTree map[string]*tracepb.Span

func newSpanTree(spans []*tracepb.Span) spanTree {
	t := spanTree{}
	for _, s := range spans {
		t[hex.EncodeToString(s.SpanId)] = s
	}
	return t
}

// path is the names from s up to the root, "docker.StartContainer < sandbox.ensurePrimary < sandbox.pass <
// sandbox.start"; a parent that never arrived ends it with "?".
func (t spanTree) path(s *tracepb.Span) string {
	names := []string{s.Name}
	for len(s.ParentSpanId) > 0 {
		parent, ok := t[hex.EncodeToString(s.ParentSpanId)]
		if !ok {
			names = append(names, "?")
			break
		}
		names = append(names, parent.Name)
		s = parent
	}
	return strings.Join(names, " < ")
}

// paths are the paths of every span of the tree.
func (t spanTree) paths() []string {
	var all []string
	for _, s := range t {
		all = append(all, t.path(s))
	}
	return all
}

// named is the spans of the tree called name.
func (t spanTree) named(name string) []*tracepb.Span {
	var found []*tracepb.Span
	for _, s := range t {
		if s.Name == name {
			found = append(found, s)
		}
	}
	return found
}

// attr is the value of one attribute of s, as text ("" when absent).
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue)
			}
			return kv.Value.String()
		}
	}
	return ""
}
