package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Enabled tells whether the standard OTEL_* variables ask for traces: an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither OTEL_SDK_DISABLED=true
// nor OTEL_TRACES_EXPORTER=none turns them off.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs, when Enabled, a tracer provider that sends spans over OTLP/HTTP as the OTEL_* variables
// say (endpoint, headers, timeout, compression, certificates, batching, sampler, resource attributes), and the
// W3C trace context as the propagator. It returns how to flush and stop it; with tracing off, a no-op.
func Setup(ctx context.Context, node string) (shutdown func(context.Context) error, err error) {
	if !Enabled(os.Getenv) {
		return func(context.Context) error { return nil }, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: the agent sends traces over OTLP/HTTP only (http/protobuf)", v, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("setting up the OTLP trace exporter: %w", err)
	}
	// The agent's own attributes first, so that OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("dockside-agent"), semconv.K8SNodeName(node)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("describing the agent for traces: %w", err)
	}
	tp := NewProvider(exp, sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(w3c)
	return tp.Shutdown, nil
}

// NewProvider is the agent's tracer provider around exp: spans batched, every span redacted on its way out
// (redact.go), root spans given their known IDs (roots.go).
func NewProvider(exp sdktrace.SpanExporter, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{
		sdktrace.WithBatcher(redacting{next: exp}), sdktrace.WithIDGenerator(ids{}),
	}, opts...)...)
}
