#!/usr/bin/env bash
# hack/dev.sh: `make dev-sim`. Runs a throwaway control plane with kubox in the foreground:
#
#   etcd, kube-apiserver, kube-controller-manager (garbage collector, service accounts, node
#   lifecycle, EndpointSlices), kube-scheduler and kwok with one fake node, then the kubox CRDs,
#   bin/kubox-controller and the sample Sandbox (config/samples/sandbox.yaml).
#
# Pods are SIMULATED by kwok: they are scheduled and reported Running with an IP, but no container
# runs, no image is pulled, and `kubectl exec/logs` do not work. Use `make dev` for a real node with runc and gVisor.
#
# Everything listens on 127.0.0.1 only, on ports that stay clear of the usual defaults (etcd
# 17379/17380, kube-apiserver 17443, ...; see below). State, logs and the kubeconfig live in a
# temporary folder that is removed on exit. Ctrl-C or SIGTERM stops every process this script
# started, by the PID it recorded, newest first, and waits for each.
#
# Environment:
#   KUBOX_DEV_DIR=DIR            state folder (must be empty or absent; removed on exit)
#   KUBOX_DEV_KEEP_STATE=1       keep the state folder (logs) on exit
#   KUBOX_DEV_EXIT_AFTER_READY=1 tear down and exit 0 right after the sample is up (for tests)
#   KUBOX_DEV_NO_CONTROLLER=1    do not start bin/kubox-controller: run your own against the
#                                printed kubeconfig (from an IDE, a debugger)
#   KUBOX_DEV_CONTROLLER=PATH    controller binary (default bin/kubox-controller)
#   KUBOX_DEV_TIMEOUT=SECONDS    limit for each wait while starting (default 120)
#
# It expects the tools built (hack/tools/install.sh etcd kubernetes kwok) and the controller
# built (go build -o bin/kubox-controller ./cmd/kubox-controller); `make dev` does both first.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

readonly ETCD_PORT=17379 ETCD_PEER_PORT=17380 API_PORT=17443 KCM_PORT=17257 SCHED_PORT=17259 \
	KWOK_PORT=17247 METRICS_PORT=17080 PROBE_PORT=17081
readonly NODE=kwok-node-0 SAMPLE=config/samples/sandbox.yaml SAMPLE_NAME=sample
readonly TIMEOUT=${KUBOX_DEV_TIMEOUT:-120}
CONTROLLER=${KUBOX_DEV_CONTROLLER:-bin/kubox-controller}

log() { printf '[dev +%3ds] %s\n' "$SECONDS" "$*"; }
die() {
	printf '[dev +%3ds] ERROR: %s\n' "$SECONDS" "$*" >&2
	exit 1
}

# --- tools ---------------------------------------------------------------------------------------
etcd_dir=$(hack/tools/install.sh dir etcd)
k8s_dir=$(hack/tools/install.sh dir kubernetes)
kwok_dir=$(hack/tools/install.sh dir kwok)
for f in "$etcd_dir/etcd" "$k8s_dir/kube-apiserver" "$k8s_dir/kube-controller-manager" \
	"$k8s_dir/kube-scheduler" "$k8s_dir/kubectl" "$kwok_dir/kwok"; do
	[ -x "$f" ] || die "$f is missing: build the tools with 'hack/tools/install.sh etcd kubernetes kwok' (make dev does)"
done
[ -s "$kwok_dir/kwok-stages.yaml" ] || die "$kwok_dir/kwok-stages.yaml is missing: rebuild kwok with hack/tools/install.sh kwok"
if [ "${KUBOX_DEV_NO_CONTROLLER:-}" != 1 ]; then
	[ -x "$CONTROLLER" ] || die "$CONTROLLER is missing: go build -o bin/kubox-controller ./cmd/kubox-controller (make dev does)"
fi
readonly KUBECTL=$k8s_dir/kubectl
command -v openssl >/dev/null || die "openssl is needed to generate the service-account keys"
command -v curl >/dev/null || die "curl is needed to probe the components"

for port in $ETCD_PORT $ETCD_PEER_PORT $API_PORT $KCM_PORT $SCHED_PORT $KWOK_PORT $METRICS_PORT $PROBE_PORT; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		die "port 127.0.0.1:$port is in use (see: ss -ltnp 'sport = :$port'); is another 'make dev' running?"
	fi
done

# --- state and teardown --------------------------------------------------------------------------
if [ -n "${KUBOX_DEV_DIR:-}" ]; then
	state=$KUBOX_DEV_DIR
	if [ -e "$state" ] && [ -n "$(ls -A "$state")" ]; then
		die "KUBOX_DEV_DIR=$state is not empty; choose an empty or new folder (it is removed on exit)"
	fi
	mkdir -p "$state"
	state=$(cd "$state" && pwd)
else
	state=$(mktemp -d "${TMPDIR:-/tmp}/kubox-dev.XXXXXX")
fi
mkdir -p "$state/logs" "$state/pids" "$state/pki"
readonly KC=$state/kubeconfig

started=() # component names, in start order

pid_of() { cat "$state/pids/$1.pid"; }

# alive PID: the process exists and is not a zombie.
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ $st != Z* ]]
}

# start NAME CMD...: run CMD in the background in its own session, so a Ctrl-C in the terminal
# reaches only this script (which stops the components in order), and record its PID.
start() {
	local name=$1
	shift
	start_to "$name" "$state/logs/$name.log" "$@"
}

# start_to NAME OUTPUT CMD...: start with stdout and stderr to the file OUTPUT, or to this
# script's own stdout and stderr when OUTPUT is "-".
start_to() {
	local name=$1 out=$2
	shift 2
	if [ "$out" = - ]; then
		setsid "$@" </dev/null &
	else
		setsid "$@" >"$out" 2>&1 </dev/null &
	fi
	echo $! >"$state/pids/$name.pid"
	started+=("$name")
}

# stop NAME: SIGTERM, up to 20 s for a graceful exit, then SIGKILL; reap it either way.
stop() {
	local name=$1 pid i
	pid=$(pid_of "$name") || return 0
	if alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 200; i++)); do
			alive "$pid" || break
			sleep 0.1
		done
		if alive "$pid"; then
			log "$name (pid $pid) did not stop within 20s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	wait "$pid" 2>/dev/null || true
	rm -f "$state/pids/$name.pid"
}

teardown() {
	local rc=$? i
	trap - EXIT INT TERM HUP
	set +e
	if ((${#started[@]} > 0)); then
		log "stopping ${#started[@]} processes"
		for ((i = ${#started[@]} - 1; i >= 0; i--)); do
			stop "${started[i]}"
		done
	fi
	if [ "${KUBOX_DEV_KEEP_STATE:-}" = 1 ]; then
		log "kept state and logs in $state"
	else
		rm -rf "$state"
	fi
	log "stopped; nothing left running"
	exit "$rc"
}
trap teardown EXIT
trap 'echo; log "interrupted"; exit 0' INT
trap 'log "terminated"; exit 0' TERM HUP

# check_all: fail with the log tail of the first component that has exited.
check_all() {
	local name pid rc
	for name in "${started[@]}"; do
		pid=$(pid_of "$name")
		alive "$pid" && continue
		rc=0
		wait "$pid" 2>/dev/null || rc=$?
		{
			printf '[dev +%3ds] ERROR: %s (pid %s) exited with status %s. Last lines of %s:\n' \
				"$SECONDS" "$name" "$pid" "$rc" "$state/logs/$name.log"
			tail -n 25 "$state/logs/$name.log" | sed 's/^/    /'
		} >&2
		exit 1
	done
}

# wait_for WHAT COMPONENT CMD...: poll CMD until it succeeds. Fails when a component dies, or
# after TIMEOUT with the last lines of COMPONENT's log, the one that should have made CMD succeed.
wait_for() {
	local what=$1 component=$2 deadline=$((SECONDS + TIMEOUT))
	shift 2
	until "$@" >/dev/null 2>&1; do
		check_all
		if ((SECONDS >= deadline)); then
			{
				printf '[dev +%3ds] ERROR: timed out after %ss waiting for %s. Last lines of %s:\n' \
					"$SECONDS" "$TIMEOUT" "$what" "$state/logs/$component.log"
				tail -n 25 "$state/logs/$component.log" | sed 's/^/    /'
			} >&2
			exit 1
		fi
		sleep 0.2
	done
}

k() { "$KUBECTL" --kubeconfig "$KC" "$@"; }

# --- credentials and kubeconfig ------------------------------------------------------------------
log "state in $state"
token=$(openssl rand -hex 24)
echo "$token,kubox-dev-admin,kubox-dev-admin,system:masters" >"$state/pki/tokens.csv"
openssl genrsa -out "$state/pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$state/pki/sa.key" -pubout -out "$state/pki/sa.pub" 2>/dev/null
chmod 600 "$state/pki/tokens.csv" "$state/pki/sa.key"
# kube-apiserver writes a self-signed serving certificate (apiserver.crt) into --cert-dir; the
# kubeconfig trusts exactly that certificate.
cat >"$KC" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kubox-dev
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $state/pki/apiserver.crt
users:
- name: kubox-dev-admin
  user:
    token: $token
contexts:
- name: kubox-dev
  context:
    cluster: kubox-dev
    user: kubox-dev-admin
current-context: kubox-dev
EOF
chmod 600 "$KC"

# --- control plane -------------------------------------------------------------------------------
log "starting etcd on 127.0.0.1:$ETCD_PORT"
start etcd "$etcd_dir/etcd" --name kubox-dev --data-dir "$state/etcd" --unsafe-no-fsync \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "kubox-dev=http://127.0.0.1:$ETCD_PEER_PORT"
wait_for "etcd to be healthy" etcd curl -sf "http://127.0.0.1:$ETCD_PORT/health"

log "starting kube-apiserver on https://127.0.0.1:$API_PORT"
start kube-apiserver "$k8s_dir/kube-apiserver" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
	--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
	--endpoint-reconciler-type=none --cert-dir="$state/pki" \
	--token-auth-file="$state/pki/tokens.csv" --authorization-mode=Node,RBAC \
	--service-account-issuer="https://127.0.0.1:$API_PORT" \
	--service-account-key-file="$state/pki/sa.pub" --service-account-signing-key-file="$state/pki/sa.key" \
	--service-cluster-ip-range=10.96.0.0/24 --allow-privileged=true
wait_for "kube-apiserver to be ready" kube-apiserver curl -sf --cacert "$state/pki/apiserver.crt" \
	-H "Authorization: Bearer $token" "https://127.0.0.1:$API_PORT/readyz"

# --authentication-skip-lookup: no client CA is configured, so there is nothing to look up (and
# the lookup would log "extension-apiserver-authentication not found" forever).
log "starting kube-controller-manager and kube-scheduler"
start kube-controller-manager "$k8s_dir/kube-controller-manager" \
	--kubeconfig="$KC" --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
	--authentication-skip-lookup --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --leader-elect=false \
	--controllers=garbage-collector-controller,persistentvolume-binder-controller,serviceaccount-controller,serviceaccount-token-controller,node-lifecycle-controller,endpointslice-controller,namespace-controller \
	--use-service-account-credentials=false \
	--service-account-private-key-file="$state/pki/sa.key" --root-ca-file="$state/pki/apiserver.crt"
start kube-scheduler "$k8s_dir/kube-scheduler" \
	--kubeconfig="$KC" --authentication-kubeconfig="$KC" --authorization-kubeconfig="$KC" \
	--authentication-skip-lookup --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --leader-elect=false

log "starting kwok with fake node $NODE (pods are simulated: no container runs)"
start kwok "$kwok_dir/kwok" --kubeconfig="$KC" --config="$kwok_dir/kwok-stages.yaml" \
	--manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
	--node-ip=127.0.0.1 --cidr=10.244.0.0/16 --server-address="127.0.0.1:$KWOK_PORT" \
	--node-lease-duration-seconds=40
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: $NODE
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
EOF
node_ready() { [ "$(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
node_untainted() { [ -z "$(k get node "$NODE" -o jsonpath='{.spec.taints}')" ]; }
wait_for "node $NODE to be Ready" kwok node_ready
wait_for "node $NODE to lose its not-ready taint" kube-controller-manager node_untainted
wait_for "the default ServiceAccount" kube-controller-manager k get serviceaccount default -n default
# What the sample asks for: RuntimeClass gvisor (kwok runs nothing, so the handler is never used)
# and a volume for its workspace claim, a hostPath PersistentVolume inside the state folder.
mkdir -p "$state/volumes/pv-0"
k apply -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: dev-sim-pv-0
spec:
  capacity:
    storage: 10Gi
  accessModes: ["ReadWriteOnce"]
  persistentVolumeReclaimPolicy: Retain
  hostPath:
    path: $state/volumes/pv-0
EOF
log "control plane ready"

# --- kubox ---------------------------------------------------------------------------------------
log "applying the CRDs in config/crd/bases"
k apply --server-side --field-manager=kubox-dev -f config/crd/bases/ >/dev/null
wait_for "the CRDs to be Established" kube-apiserver k wait --for=condition=Established --timeout=5s -f config/crd/bases/

if [ "${KUBOX_DEV_NO_CONTROLLER:-}" = 1 ]; then
	log "KUBOX_DEV_NO_CONTROLLER=1: not starting $CONTROLLER and not applying $SAMPLE"
else
	# Pass only flags the binary has; the metrics and probe servers move off :8080/:8081.
	help=$("$CONTROLLER" --help 2>&1 || true)
	args=(--kubeconfig "$KC" --leader-elect=false)
	has_flag() { grep -q -- "-$1[ =]" <<<"$help"; }
	has_flag metrics-bind-address && args+=("--metrics-bind-address=127.0.0.1:$METRICS_PORT")
	has_flag health-probe-bind-address && args+=("--health-probe-bind-address=127.0.0.1:$PROBE_PORT")
	log "starting $CONTROLLER ${args[*]}"
	KUBECONFIG=$KC start kubox-controller "$CONTROLLER" "${args[@]}"
	if has_flag health-probe-bind-address; then
		wait_for "kubox-controller to be ready" kubox-controller curl -sf "http://127.0.0.1:$PROBE_PORT/readyz"
	else
		sleep 2
		check_all
	fi

	log "applying $SAMPLE"
	k apply -f "$SAMPLE" >/dev/null
	wait_for "Pod $SAMPLE_NAME" kubox-controller k get pod "$SAMPLE_NAME"
	wait_for "Service $SAMPLE_NAME" kubox-controller k get service "$SAMPLE_NAME"
	if ! k wait --for=condition=Ready --timeout=30s "sandbox/$SAMPLE_NAME" >/dev/null 2>&1; then
		log "warning: Sandbox $SAMPLE_NAME is not Ready after 30s: $(k get sandbox "$SAMPLE_NAME" \
			-o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}')"
	fi
	check_all
fi

# --- report --------------------------------------------------------------------------------------
echo
k get sandbox,pod,svc,pvc -o wide
cat <<EOF

make dev-sim is up. Pods are SIMULATED by kwok on the fake node $NODE: they are scheduled and report
Running with an IP, but no container runs, no image is pulled, and kubectl exec/logs do not work.

From another terminal:
  export KUBECONFIG=$KC
  $KUBECTL get sandbox,pod,svc        # kubectl v1.37 matching the API server
Controller metrics: http://127.0.0.1:$METRICS_PORT/metrics (if the controller serves them)
Logs: $state/logs/
EOF

if [ "${KUBOX_DEV_EXIT_AFTER_READY:-}" = 1 ]; then
	log "KUBOX_DEV_EXIT_AFTER_READY=1: tearing down"
	exit 0
fi

echo "Press Ctrl-C to stop everything and remove $state."
echo
if [ "${KUBOX_DEV_NO_CONTROLLER:-}" != 1 ]; then
	log "following the kubox-controller log"
	start_to follow-controller-log - tail -n +1 -F "$state/logs/kubox-controller.log"
fi
while true; do
	check_all
	sleep 1
done
