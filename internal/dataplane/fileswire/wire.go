// Package fileswire is what the files subresource's server (internal/dataplane/files) and its client
// (internal/dataplane/filesclient) both speak, so that neither holds a copy of the other's words.
//
// A call that carries a body (a read, a write, a tar stream in or out) may ask for a WebSocket upgrade, which
// kube-apiserver's --request-timeout does not cut (docs/design/dataplane-files.md, "The API server's request
// timeout"). Its checks answer in plain HTTP as for any call; once the body moves:
//   - a WebSocket handshake is always a GET: the call names its own method in the query (MethodParam=PUT);
//   - binary messages are the body's bytes, either way;
//   - the client ends what it sends with the text message EndOfBody; a connection that closes before it broke
//     the upload off, and nothing is written;
//   - the server ends the call with one text message, the outcome: the JSON the plain call answers with (a
//     write's FileInfo) or a Kubernetes Status (Success after a read; Failure with its code and message),
//     and then closes the connection. A read without a Success outcome did not arrive whole.
package fileswire

// Protocol is the WebSocket subprotocol of an upgraded files call.
const Protocol = "v1.files.dockside.dev"

// MethodParam is the query parameter by which a WebSocket handshake, always a GET, names the call's method.
const MethodParam = "method"

// EndOfBody is the client's text message that ends an upload.
const EndOfBody = "end"
