// Package conformance checks that kubox-agent speaks agent-sandbox's sandboxd protocol the way
// agent-sandbox v1's SDKs use it. The client is written from the wire alone: gRPC calls by method
// path with the messages of proto/process/v1 and proto/watcher/v1 (grpc-go over plain HTTP/2, as
// grpcio and grpc-go clients connect to sandboxd), and the REST calls sandboxd's user guide
// documents, over net/http.
//
// Run runs the suite against a Target. This package's tests run it against a real kubox-agent in
// the test process on 127.0.0.1 with the agent token required (`make test-conformance`, part of
// `make test`; nothing but Go and /bin/sh); test/conformance/router runs it through a real
// kubox-router against a real kube-apiserver (`make test-integration`).
package conformance
