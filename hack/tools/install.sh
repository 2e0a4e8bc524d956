#!/usr/bin/env bash
# Builds kubox's pinned tools once into a version-keyed cache outside the checkout and reuses them.
#
#   hack/tools/install.sh [TOOL...]     build what is missing (default: every tool)
#   hack/tools/install.sh dir TOOL      print the cache folder of TOOL (built or not)
#   hack/tools/install.sh envtest       build etcd + kube-apiserver and print a KUBEBUILDER_ASSETS folder
#   hack/tools/install.sh test-gvisor-patch [FLAGS]  run the patched gVisor shim's kubox tests (go test FLAGS)
#   hack/tools/install.sh gvisor-stock-shim  gVisor's own containerd-shim-runsc-v1 from the same pinned
#                                       module, without kubox's patches but the host one (GVISOR_HOST_PATCHES):
#                                       the stock shim `kubox dev up --stock-shim` starts the node with
#   hack/tools/install.sh node          build what a local node needs (`kubox dev up`): etcd, kubernetes,
#                                       containerd, gvisor (runsc + containerd-shim-runsc-v1, patched) and
#                                       kube-network-policies (patched)
#
# TOOL is the name of a wrapper module under hack/tools/ (etcd, kubernetes, kwok, controller-gen,
# golangci-lint, buf, helm; node tools: containerd, gvisor, kube-network-policies; seaweedfs: the
# S3 server the snapshot store's integration tests run against). Each module's go.mod pins the version; the cache folder
# is $KUBOX_TOOLS_DIR/<tool>-<version> (default ~/.cache/kubox/tools). A folder is used only when its
# .complete marker exists, so an interrupted build is redone, and a present one is never rebuilt.
#
# buf is two modules because buf's own protobuf requirement is newer than the runtime kubox links:
# hack/tools/buf pins buf, hack/tools/buf/plugins pins protoc-gen-go (same version as kubox's
# google.golang.org/protobuf) and protoc-gen-connect-go (same as kubox's connectrpc.com/connect). All three
# binaries share one folder whose name carries all three versions, so changing any pin rebuilds it.
# kube-network-policies is built with hack/tools/kube-network-policies/patches applied; its folder
# name carries a hash of the patches too.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOLS_DIR=${KUBOX_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubox/tools}
ALL_TOOLS="controller-gen golangci-lint buf etcd kubernetes kwok helm"
NODE_TOOLS="etcd kubernetes containerd gvisor kube-network-policies"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local}

log() { printf '[tools +%4ds] %s\n' "$SECONDS" "$*" >&2; }

# module TOOL: the Go module whose version names the cache folder.
module() {
	case $1 in
	controller-gen) echo sigs.k8s.io/controller-tools ;;
	golangci-lint) echo github.com/golangci/golangci-lint/v2 ;;
	buf) echo github.com/bufbuild/buf ;;
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	kubernetes) echo k8s.io/kubernetes ;;
	kwok) echo sigs.k8s.io/kwok ;;
	helm) echo helm.sh/helm/v4 ;;
	containerd) echo github.com/containerd/containerd/v2 ;;
	gvisor | gvisor-stock-shim) echo gvisor.dev/gvisor ;;
	kube-network-policies) echo sigs.k8s.io/kube-network-policies ;;
	seaweedfs) echo github.com/seaweedfs/seaweedfs ;;
	*) echo "unknown tool '$1' (known: $ALL_TOOLS containerd gvisor kube-network-policies seaweedfs)" >&2; return 1 ;;
	esac
}

# modversion GOMOD MODULE: the version of MODULE required by the go.mod file GOMOD.
modversion() {
	awk -v m="$2" '$1 == m && $2 ~ /^v/ {print $2; exit} $1 == "require" && $2 == m {print $3; exit}' "$1"
}

version() { modversion "$here/${1%-stock-shim}/go.mod" "$(module "$1")"; }

# GVISOR_HOST_PATCHES are the patches the stock shim keeps: they make any gVisor shim run on a
# host whose root lacks CAP_SYS_RESOURCE, and add nothing of kubox's.
GVISOR_HOST_PATCHES="shim-oom-score.patch"

# key TOOL: the suffix of the cache folder; every pinned version that goes into the folder.
key() {
	case $1 in
	buf)
		local p="$here/buf/plugins/go.mod"
		echo "$(version buf)-protoc-gen-go-$(modversion "$p" google.golang.org/protobuf)-connect-go-$(modversion "$p" connectrpc.com/connect)"
		;;
	gvisor | kube-network-policies)
		# the patches are part of what is built: a changed patch gets its own folder
		echo "$(version "$1")-patches-$(cat "$here/$1"/patches/*.patch | sha256sum | cut -c1-12)"
		;;
	gvisor-stock-shim)
		echo "$(version gvisor)-patches-$(cd "$here/gvisor/patches" && cat $GVISOR_HOST_PATCHES | sha256sum | cut -c1-12)"
		;;
	*) version "$1" ;;
	esac
}

dir() { echo "$TOOLS_DIR/$1-$(key "$1")"; }

# tool_pkgs GOMOD: the packages named by the tool directives of GOMOD.
tool_pkgs() { awk '/^tool \(/{f=1; next} f && /^\)/{f=0} f {print $1} /^tool [^(]/{print $2}' "$1"; }

# build_into TOOL OUT: go build each tool package of the wrapper module into OUT.
build_into() {
	local tool=$1 out=$2 ver ld pkgs tags=""
	ver=$(version "$tool")
	ld="-s -w"
	if [ "$tool" = gvisor ]; then
		build_gvisor "$out" "$ld"
		return
	fi
	if [ "$tool" = gvisor-stock-shim ]; then
		build_gvisor_stock_shim "$out" "$ld"
		return
	fi
	if [ "$tool" = kube-network-policies ]; then
		build_knp "$out" "$ld"
		return
	fi
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
	helm) ld="$ld -X helm.sh/helm/v4/internal/version.version=$ver -X helm.sh/helm/v4/internal/version.gitTreeState=clean" ;;
	containerd)
		tags="no_btrfs no_devmapper no_zfs"
		ld="$ld -X github.com/containerd/containerd/v2/version.Version=$ver"
		;;
	esac
	if [ "$tool" = buf ]; then
		for pkg in $(tool_pkgs "$here/buf/plugins/go.mod"); do
			log "building ${pkg##*/} (first time only)"
			(cd "$here/buf/plugins" && go build -trimpath -ldflags "$ld" -o "$out/${pkg##*/}" "$pkg")
		done
	fi
	pkgs=$(tool_pkgs "$here/$tool/go.mod")
	for pkg in $pkgs; do
		local name=${pkg##*/}
		[ "$tool" = etcd ] && name=etcd
		log "building $name $ver (first time only)"
		(cd "$here/$tool" && go build -trimpath -tags "$tags" -ldflags "$ld" -o "$out/$name" "$pkg")
	done
	if [ "$tool" = kwok ]; then stages "$ver" >"$out/kwok-stages.yaml"; fi
}

# gvisor_src [PATCH...]: a temporary copy of the pinned gVisor module with hack/tools/gvisor/patches/*.patch
# (or only the PATCHes named) applied, replacing the module in a copy of the wrapper module; prints
# its folder (the caller removes it). No third-party source is committed.
gvisor_src() {
	local src tmp patches=("$here"/gvisor/patches/*.patch)
	if [ $# -gt 0 ]; then patches=("${@/#/$here/gvisor/patches/}"); fi
	src=$(cd "$here/gvisor" && go mod download gvisor.dev/gvisor && go list -m -f '{{.Dir}}' gvisor.dev/gvisor)
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/kubox-gvisor-build.XXXXXX")
	cp "$here/gvisor/go.mod" "$here/gvisor/go.sum" "$tmp/"
	cp -r "$src" "$tmp/gvisor"
	chmod -R u+w "$tmp/gvisor"
	for p in "${patches[@]}"; do
		log "patching gVisor: $(basename "$p")"
		patch -s -d "$tmp/gvisor" -p1 <"$p" >&2 || { rm -rf "$tmp"; return 1; }
	done
	(cd "$tmp" && go mod edit -replace gvisor.dev/gvisor=./gvisor) || { rm -rf "$tmp"; return 1; }
	echo "$tmp"
}

# build_gvisor OUT LDFLAGS: runsc and containerd-shim-runsc-v1 from gvisor_src (the shim must
# tolerate a root without CAP_SYS_RESOURCE, and restores Pods from kubox's snapshots).
build_gvisor() {
	local out=$1 ld=$2 tmp
	tmp=$(gvisor_src)
	log "building runsc $(version gvisor) (first time only)"
	(cd "$tmp" && go build -trimpath -ldflags "$ld -X gvisor.dev/gvisor/runsc/version.version=$(version gvisor)" \
		-o "$out/runsc" gvisor.dev/gvisor/runsc) || { rm -rf "$tmp"; return 1; }
	log "building containerd-shim-runsc-v1 (patched)"
	(cd "$tmp" && go build -trimpath -ldflags "$ld" -o "$out/containerd-shim-runsc-v1" gvisor.dev/gvisor/shim) ||
		{ rm -rf "$tmp"; return 1; }
	rm -rf "$tmp"
}

# build_gvisor_stock_shim OUT LDFLAGS: gVisor's containerd-shim-runsc-v1 with GVISOR_HOST_PATCHES
# only: it cannot restore a Pod from a snapshot (kubox-node install brings the patched one).
build_gvisor_stock_shim() {
	local out=$1 ld=$2 tmp
	# shellcheck disable=SC2086 # a list of patch names
	tmp=$(gvisor_src $GVISOR_HOST_PATCHES)
	log "building containerd-shim-runsc-v1 (stock, $GVISOR_HOST_PATCHES only)"
	(cd "$tmp" && go build -trimpath -ldflags "$ld" -o "$out/containerd-shim-runsc-v1" gvisor.dev/gvisor/shim) ||
		{ rm -rf "$tmp"; return 1; }
	rm -rf "$tmp"
}

# test_gvisor_patch [GO TEST FLAGS]: the patched shim's own kubox tests (kubox_restore_test.go:
# the attacks on a restore from a snapshot), pure Go and without root, on gvisor_src. Builds no
# tool and writes nothing to the tool cache.
test_gvisor_patch() {
	local tmp rc=0
	tmp=$(gvisor_src)
	log "testing the patched shim (go test ./pkg/shim/v1/runsc/ -run Kubox)"
	(cd "$tmp" && go test -count=1 -run Kubox "$@" gvisor.dev/gvisor/pkg/shim/v1/runsc) || rc=$?
	rm -rf "$tmp"
	return "$rc"
}

# build_knp OUT LDFLAGS: kube-network-policies from a temporary copy of the pinned module with
# hack/tools/kube-network-policies/patches/*.patch applied, in order (each patch's header says why:
# a --kubeconfig flag, the xtables NFQUEUE target for kernels without nft's queue expression, and
# the NetworkPolicy API's local-node rule). No third-party source is committed.
build_knp() {
	local out=$1 ld=$2 w="$here/kube-network-policies" src tmp
	src=$(cd "$w" && go mod download sigs.k8s.io/kube-network-policies && go list -m -f '{{.Dir}}' sigs.k8s.io/kube-network-policies)
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/kubox-knp-build.XXXXXX")
	cp "$w/go.mod" "$w/go.sum" "$tmp/"
	cp -r "$src" "$tmp/knp"
	chmod -R u+w "$tmp/knp"
	for p in "$w"/patches/*.patch; do
		log "patching kube-network-policies: $(basename "$p")"
		patch -s -d "$tmp/knp" -p1 <"$p" || { rm -rf "$tmp"; return 1; }
	done
	(cd "$tmp" && go mod edit -replace sigs.k8s.io/kube-network-policies=./knp) || { rm -rf "$tmp"; return 1; }
	log "building kube-network-policies $(version kube-network-policies) (first time only)"
	(cd "$tmp" && go build -trimpath -ldflags "$ld" -o "$out/kube-network-policies" sigs.k8s.io/kube-network-policies/cmd) ||
		{ rm -rf "$tmp"; return 1; }
	rm -rf "$tmp"
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
	local tool=$1 out lock
	out=$(dir "$tool")
	[ -e "$out/.complete" ] && return 0
	# Two install.sh runs (two checkouts, or make targets run in parallel) must not build into the
	# same .partial folder: the second waits for the first and then finds the tool complete.
	mkdir -p "$TOOLS_DIR"
	exec {lock}>"$out.lock"
	if ! flock -n "$lock"; then
		log "waiting for another build of $tool $(key "$tool")"
		flock "$lock"
	fi
	if [ ! -e "$out/.complete" ]; then
		rm -rf "$out.partial"
		mkdir -p "$out.partial"
		build_into "$tool" "$out.partial"
		rm -rf "$out"
		mv "$out.partial" "$out"
		touch "$out/.complete"
		log "$tool $(key "$tool") ready in $out"
	fi
	exec {lock}>&-
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
test-gvisor-patch)
	shift
	test_gvisor_patch "$@"
	;;
node) for t in $NODE_TOOLS; do ensure "$t"; done ;;
"")
	for t in $ALL_TOOLS; do ensure "$t"; done
	envtest >/dev/null
	;;
*) for t in "$@"; do ensure "$t"; done ;;
esac
