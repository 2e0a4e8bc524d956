// Package sandbox implements the Sandbox controller.
//
// For every Sandbox it owns, through controller owner references, one Pod and optionally one
// headless Service, both named like the Sandbox, and one PersistentVolumeClaim per volume claim
// template, named <template>-<sandbox>. The Pod is created from spec.podTemplate and never
// updated afterwards except for its labels and annotations; suspending deletes it and resuming
// creates it again with the same name and volumes. At spec.shutdownTime the Pod and Service are
// deleted and spec.shutdownPolicy decides whether the Sandbox stays (Ready=False/SandboxExpired)
// or goes. Pre-existing objects are adopted only when unowned and labelled adoptable (or carrying
// the Sandbox's name-hash label); objects controlled by anything else are never touched.
//
// Each pass observes the children, acts on them, computes the status as a pure function of what
// it observed (status.go) and writes it once with optimistic concurrency.
package sandbox
