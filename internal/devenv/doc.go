// Package devenv assembles kubox's local environment: a real single-node Kubernetes cluster on one
// Linux machine, with no Docker and no registry. etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd 2.x and the kubelet are built once from pinned Go modules
// (hack/tools/install.sh), started as detached processes with a pidfile and a log each, and
// configured so that pods run under runc (RuntimeClass "runc") or gVisor (RuntimeClass "gvisor").
//
// The package separates planning from acting: config rendering, command lines, preflight
// decisions and the PKI are pure functions with unit tests (render.go, components.go,
// preflight.go, pki.go); up.go, down.go and status.go run them against the machine.
//
// Everything lives under one state directory (Layout), so `kubox dev down` can remove it all:
// it stops only the processes whose PIDs it recorded, unmounts what is mounted below the state
// directory, and deletes the bridge and the cgroup subtree it created.
package devenv
