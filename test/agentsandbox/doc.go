// Package agentsandbox runs agent-sandbox's own Go SDK (sigs.k8s.io/agent-sandbox/clients/go/sandbox,
// the published module) against kubox on the local node: the proof that an agent-sandbox user's Go
// program works unchanged. It is a module of its own so that kubox's modules do not depend on
// agent-sandbox's; its test needs the environment `make test-e2e` brings up (build tag e2e).
package agentsandbox
