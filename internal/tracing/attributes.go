package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
)

// Dockside's own attribute keys; the semantic conventions' are used where one exists.
const (
	keySandbox            = attribute.Key("dockside.sandbox.name")
	keySandboxUID         = attribute.Key("dockside.sandbox.uid")
	keyTopologyGeneration = attribute.Key("dockside.topology.generation")
	keyPhase              = attribute.Key("dockside.phase")
	keyReason             = attribute.Key("dockside.reason")
	keyService            = attribute.Key("dockside.service.name")
	keyExecution          = attribute.Key("dockside.execution.name")
	keyCheckpoint         = attribute.Key("dockside.checkpoint.name")
	keyDockerOperation    = attribute.Key("dockside.docker.operation")
	keyRole               = attribute.Key("dockside.role")
	keyExitCode           = attribute.Key("dockside.exit_code")
	keyBytes              = attribute.Key("dockside.bytes")
	keySubresource        = attribute.Key("dockside.subresource")
)

// allowed are the only attribute keys a span may carry when it is exported (redact.go): names of Kubernetes
// objects and Docker objects, generations, phases, reasons, kinds and counts. Never an image reference, a
// command, its arguments, env values, stdin, output, a Secret's name or value, a user's identity or Docker's
// error text: no key here holds one, and a key not here is dropped.
var allowed = map[attribute.Key]bool{
	semconv.K8SNamespaceNameKey:       true,
	semconv.K8SNodeNameKey:            true,
	semconv.ContainerIDKey:            true,
	semconv.ContainerNameKey:          true,
	semconv.ErrorTypeKey:              true,
	semconv.HTTPRequestMethodKey:      true,
	semconv.HTTPResponseStatusCodeKey: true,
	keySandbox:                        true,
	keySandboxUID:                     true,
	keyTopologyGeneration:             true,
	keyPhase:                          true,
	keyReason:                         true,
	keyService:                        true,
	keyExecution:                      true,
	keyCheckpoint:                     true,
	keyDockerOperation:                true,
	keyRole:                           true,
	keyExitCode:                       true,
	keyBytes:                          true,
	keySubresource:                    true,
}

// Namespace is the namespace of the object a span works on.
func Namespace(ns string) attribute.KeyValue { return semconv.K8SNamespaceName(ns) }

// Node is the agent's node.
func Node(name string) attribute.KeyValue { return semconv.K8SNodeName(name) }

// Sandbox names the Sandbox a span works on.
func Sandbox(name string) attribute.KeyValue { return keySandbox.String(name) }

// SandboxUID is the UID of the Sandbox a span works on.
func SandboxUID(uid string) attribute.KeyValue { return keySandboxUID.String(uid) }

// TopologyGeneration is the topology generation a span builds or runs in.
func TopologyGeneration(g int64) attribute.KeyValue { return keyTopologyGeneration.Int64(g) }

// Phase is the phase an object was left in.
func Phase(p string) attribute.KeyValue { return keyPhase.String(p) }

// Reason is the CamelCase reason of an outcome (a condition's reason, an Execution's), never its message.
func Reason(r string) attribute.KeyValue { return keyReason.String(r) }

// Service is a SandboxService's name.
func Service(name string) attribute.KeyValue { return keyService.String(name) }

// Execution is an Execution's name.
func Execution(name string) attribute.KeyValue { return keyExecution.String(name) }

// Checkpoint is a Checkpoint's name.
func Checkpoint(name string) attribute.KeyValue { return keyCheckpoint.String(name) }

// DockerOperation is the driver's operation (RemoveContainer, Exec...).
func DockerOperation(op string) attribute.KeyValue { return keyDockerOperation.String(op) }

// Role is the role of a Docker object in its Sandbox (primary, service, holder).
func Role(r string) attribute.KeyValue { return keyRole.String(r) }

// ContainerID is a Docker container's ID.
func ContainerID(id string) attribute.KeyValue { return semconv.ContainerID(id) }

// ExitCode is how a command or container exited.
func ExitCode(code int) attribute.KeyValue { return keyExitCode.Int(code) }

// Bytes is a size (an archive's, a copy's).
func Bytes(n int64) attribute.KeyValue { return keyBytes.Int64(n) }

// ErrorType is the kind of an error (the driver's classification, an HTTP reason), never its text.
func ErrorType(kind string) attribute.KeyValue { return semconv.ErrorTypeKey.String(kind) }

// HTTPMethod and HTTPStatus describe a data-plane request.
func HTTPMethod(m string) attribute.KeyValue { return semconv.HTTPRequestMethodKey.String(m) }

// HTTPStatus is the status code a data-plane request was answered with.
func HTTPStatus(code int) attribute.KeyValue { return semconv.HTTPResponseStatusCode(code) }

// Subresource is the data-plane subresource asked for (exec, files, portforward).
func Subresource(s string) attribute.KeyValue { return keySubresource.String(s) }
