// Package usage meters what a Sandbox used, from its lifecycle as the controller observes it:
// running and suspended seconds, wakes (suspended to running), and the CPU core-seconds and
// memory GiB-seconds its Pod requested while running. It is pure Go: the controller feeds it
// observations and writes its Figures into a Record.
//
// Requested figures are requests times running time: they are what the sandbox reserved, not
// what it used. What the kubelet measured (CPU seconds, working-set memory over time) goes in
// Record.Measured, which is nil until a measured source fills it; a requested figure is never
// reported as measured.
package usage
