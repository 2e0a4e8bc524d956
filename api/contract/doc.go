// Package contract holds kubox's wire contracts: the names, numbers and derivations that two or
// more components (kubox-controller, kubox-router, kubox-agent, the kubox CLI and the Go SDK)
// must agree on, so that none of them reaches into another's package for one.
//
// Each constant and function says which components write (produce) and which read (consume) it.
// Changing one is a wire change: every component of a release, and every client of earlier
// releases that is still supported, must agree on the new value.
//
// The package depends on the standard library and k8s.io/apimachinery only, so the SDK and
// out-of-tree clients can import it. Label and annotation keys shared with agent-sandbox stay
// next to the API types (api/v1beta1 and api/extensions/v1beta1).
package contract
