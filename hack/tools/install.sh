#!/usr/bin/env bash
# Builds kubox's pinned tools once into a version-keyed cache outside the checkout and reuses them.
#
#   hack/tools/install.sh [TOOL...]     build what is missing (default: every tool)
#   hack/tools/install.sh dir TOOL      print the cache folder of TOOL (built or not)
#   hack/tools/install.sh envtest       build etcd + kube-apiserver and print a KUBEBUILDER_ASSETS folder
#
# TOOL is the name of a wrapper module under hack/tools/ (etcd, kubernetes, kwok, controller-gen,
# golangci-lint). Each module's go.mod pins the version; the cache folder is
# $KUBOX_TOOLS_DIR/<tool>-<version> (default ~/.cache/kubox/tools). A folder is used only when its
# .complete marker exists, so an interrupted build is redone, and a present one is never rebuilt.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOLS_DIR=${KUBOX_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubox/tools}
ALL_TOOLS="controller-gen golangci-lint etcd kubernetes kwok"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local}

log() { printf '[tools +%4ds] %s\n' "$SECONDS" "$*" >&2; }

# module TOOL: the Go module whose version names the cache folder.
module() {
	case $1 in
	controller-gen) echo sigs.k8s.io/controller-tools ;;
	golangci-lint) echo github.com/golangci/golangci-lint/v2 ;;
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	kubernetes) echo k8s.io/kubernetes ;;
	kwok) echo sigs.k8s.io/kwok ;;
	*) echo "unknown tool '$1' (known: $ALL_TOOLS)" >&2; return 1 ;;
	esac
}

version() {
	local mod
	mod=$(module "$1")
	awk -v m="$mod" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' \
		"$here/$1/go.mod"
}

dir() { echo "$TOOLS_DIR/$1-$(version "$1")"; }

# build_into TOOL OUT: go build each tool package of the wrapper module into OUT.
build_into() {
	local tool=$1 out=$2 ver ld pkgs
	ver=$(version "$tool")
	ld="-s -w"
	case $tool in
	kubernetes)
		local minor=${ver#v1.}
		minor=${minor%%.*}
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ld="$ld -X $p.gitVersion=$ver -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
		done
		;;
	golangci-lint) ld="$ld -X main.version=${ver#v}" ;;
	controller-gen) ld="$ld -X sigs.k8s.io/controller-tools/pkg/version.version=$ver" ;;
	esac
	pkgs=$(awk '/^tool \(/{f=1; next} f && /^\)/{f=0} f {print $1} /^tool [^(]/{print $2}' "$here/$tool/go.mod")
	for pkg in $pkgs; do
		local name=${pkg##*/}
		[ "$tool" = etcd ] && name=etcd
		log "building $name $ver (first time only)"
		(cd "$here/$tool" && go build -trimpath -ldflags "$ld" -o "$out/$name" "$pkg")
	done
	if [ "$tool" = kwok ]; then stages "$ver" >"$out/kwok-stages.yaml"; fi
}

# stages VERSION: kwok's own Stage definitions (node ready + heartbeat, pod ready/complete/delete).
stages() {
	local src
	src=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
	for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		echo '---'
		cat "$src/$f"
	done
}

ensure() {
	local tool=$1 out
	out=$(dir "$tool")
	[ -e "$out/.complete" ] && return 0
	rm -rf "$out.partial"
	mkdir -p "$out.partial"
	build_into "$tool" "$out.partial"
	rm -rf "$out"
	mv "$out.partial" "$out"
	touch "$out/.complete"
	log "$tool $(version "$tool") ready in $out"
}

# envtest: a folder holding exactly what envtest needs (etcd, kube-apiserver, kubectl).
envtest() {
	ensure etcd
	ensure kubernetes
	local e k out
	e=$(dir etcd)
	k=$(dir kubernetes)
	out="$TOOLS_DIR/envtest-$(version kubernetes)-etcd-$(version etcd)"
	mkdir -p "$out"
	ln -sfn "$e/etcd" "$out/etcd"
	ln -sfn "$k/kube-apiserver" "$out/kube-apiserver"
	ln -sfn "$k/kubectl" "$out/kubectl"
	echo "$out"
}

case ${1:-} in
dir) dir "$2" ;;
envtest) envtest ;;
"")
	for t in $ALL_TOOLS; do ensure "$t"; done
	envtest >/dev/null
	;;
*) for t in "$@"; do ensure "$t"; done ;;
esac
