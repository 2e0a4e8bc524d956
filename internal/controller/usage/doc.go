// Package usage is the controller side of usage metering: a Tracker fed with every Sandbox the
// controller observes keeps one usage.Meter per sandbox UID, exports the figures as Prometheus
// counters at bounded cardinality (per namespace, template and principal, never per sandbox),
// and returns the sandbox's usage.Record when it is deleted, for the sinks.
//
// The Tracker holds its meters in memory: what it counts is what this controller process saw.
// Time during which no controller ran is not counted, and a sandbox deleted while no controller
// ran gets no record (no finalizer holds its deletion for the meter).
package usage
