package sandbox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/inflight"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	"github.com/kubox-dev/kubox/internal/controller/status"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

// fakeNodes is kubox-node answering with fail, or with a snapshot named as asked; Fetch answers
// fetchErr, or that it copied the snapshot when fetched is set.
type fakeNodes struct {
	fail        error
	checkpoints []*nodev1.CheckpointRequest
	hosts       []string
	deleted     []string
	fetches     []string
	fetchErr    error
	fetched     bool
}

func (f *fakeNodes) Fetch(_ context.Context, hostIP, namespace, snapshot string) (*nodev1.FetchSnapshotResponse, error) {
	f.fetches = append(f.fetches, hostIP+" "+namespace+"/"+snapshot)
	if f.fetchErr != nil {
		return nil, f.fetchErr
	}
	return &nodev1.FetchSnapshotResponse{Snapshot: &nodev1.Snapshot{Namespace: namespace, Name: snapshot}, Fetched: f.fetched}, nil
}

func (f *fakeNodes) Checkpoint(_ context.Context, hostIP string, req *nodev1.CheckpointRequest) (*nodev1.Snapshot, error) {
	f.checkpoints, f.hosts = append(f.checkpoints, req), append(f.hosts, hostIP)
	if f.fail != nil {
		return nil, f.fail
	}
	return &nodev1.Snapshot{Namespace: req.GetNamespace(), Name: req.GetSnapshot(), Image: "/snapshots/" + req.GetNamespace() + "/" + req.GetSnapshot() + "/image",
		SizeBytes: 3 << 20, Sha256: "abc", Duration: durationpb.New(250 * time.Millisecond), CreateTime: timestamppb.New(testNow.Time)}, nil
}

func (f *fakeNodes) DeleteSnapshot(_ context.Context, _, namespace, snapshot string) error {
	f.deleted = append(f.deleted, namespace+"/"+snapshot)
	return nil
}

// memoryReconciler is a Reconciler on a fake API holding a Sandbox that keeps its memory, and its
// running Pod on node-a.
func memoryReconciler(t *testing.T, nodes nodeapi.Client) (*Reconciler, client.Client, *events.FakeRecorder, *sandboxv1beta1.Sandbox, *corev1.Pod) {
	t.Helper()
	sb := withMeta(testSandbox().Obj())
	sb.Spec.SuspendPolicy = &sandboxv1beta1.SuspendPolicy{KeepMemory: true}
	pod := testPod().Obj()
	pod.UID, pod.Spec.NodeName = types.UID("pod-uid-1"), "node-a"
	pod.Status.Phase, pod.Status.HostIP = corev1.PodRunning, "192.0.2.10"
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(sb).WithStatusSubresource(sb).Build()
	rec := events.NewFakeRecorder(10)
	clk := clocktesting.NewFakePassiveClock(testNow.Time)
	r := &Reconciler{client: c, recorder: rec, clock: clk, sandboxes: inflight.NewVersions(clk),
		status: status.NewWriter(c, rec, FieldManager, "Sandbox"), nodes: nodeapi.NotConfigured()}
	if nodes != nil {
		r.nodes = nodes
	}
	return r, c, rec, sb, pod
}

// checkpointedOnNode is memoryReconciler's Sandbox after a suspend that kept its memory, with its
// node node-a in the API (the finalizers and discards look kubox-node up there).
func checkpointedOnNode(t *testing.T, nodes nodeapi.Client) (*Reconciler, client.Client, *events.FakeRecorder, *sandboxv1beta1.Sandbox) {
	t.Helper()
	r, c, rec, sb, pod := memoryReconciler(t, nodes)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}}}}
	if err := c.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	r.apiReader = c
	if err := r.keepMemory(t.Context(), sb, pod); err != nil {
		t.Fatal(err)
	}
	return r, c, rec, sb
}

func TestKeepMemoryRecordsTheSnapshotBeforeTheSuspend(t *testing.T) {
	nodes := &fakeNodes{}
	r, c, rec, sb, pod := memoryReconciler(t, nodes)
	if err := r.keepMemory(t.Context(), sb, pod); err != nil {
		t.Fatal(err)
	}
	if len(nodes.checkpoints) != 1 || nodes.hosts[0] != "192.0.2.10" {
		t.Fatalf("checkpoints %v on %v: want one, on the Pod's node", nodes.checkpoints, nodes.hosts)
	}
	req := nodes.checkpoints[0]
	if req.GetNamespace() != testNS || req.GetPod() != testName || req.GetPodUid() != "pod-uid-1" || req.GetSnapshot() != "pod-uid-1" || req.GetLeaveRunning() {
		t.Errorf("checkpoint request %v: want the Pod by its UID, named by it, stopping it", req)
	}
	stored := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	m := stored.Status.Memory
	if m == nil || m.Snapshot != "pod-uid-1" || m.NodeName != "node-a" || m.Image != "/snapshots/team-a/pod-uid-1/image" || m.SizeBytes != 3<<20 || m.SHA256 != "abc" {
		t.Fatalf("status.memory in the API = %+v: want the snapshot, written before the Pod goes", m)
	}
	cond := meta.FindStatusCondition(stored.Status.Conditions, sandboxv1beta1.SandboxConditionMemoryKept)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != sandboxv1beta1.SandboxReasonCheckpointed || !strings.Contains(cond.Message, "3.0 MiB") {
		t.Errorf("MemoryKept = %+v, want True/Checkpointed with the size", cond)
	}
	if ev := <-rec.Events; !strings.Contains(ev, "Normal MemoryKept") {
		t.Errorf("event %q, want Normal MemoryKept", ev)
	}
	// A second pass over the same Pod (the delete failed, a conflict) asks nothing more.
	if err := r.keepMemory(t.Context(), stored, pod); err != nil || len(nodes.checkpoints) != 1 {
		t.Errorf("second pass: %v, %d checkpoints; want none more", err, len(nodes.checkpoints))
	}
	// The next suspend's snapshot replaces it, and the old one is deleted.
	next := pod.DeepCopy()
	next.UID = "pod-uid-2"
	if err := r.keepMemory(t.Context(), stored, next); err != nil {
		t.Fatal(err)
	}
	if stored.Status.Memory.Snapshot != "pod-uid-2" || len(nodes.deleted) != 1 || nodes.deleted[0] != "team-a/pod-uid-1" {
		t.Errorf("after the next suspend: memory %s, deleted %v; want pod-uid-2 and team-a/pod-uid-1 deleted", stored.Status.Memory.Snapshot, nodes.deleted)
	}
}

func TestKeepMemoryFailsOverToAPlainSuspend(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes nodeapi.Client
		phase corev1.PodPhase
		want  string
	}{
		"node refuses": {&fakeNodes{fail: errors.New("runsc checkpoint: not gVisor")}, corev1.PodRunning, "runsc checkpoint: not gVisor"},
		"no node API":  {nil, corev1.PodRunning, "controllers.sandbox.memory.tokenFile"},
		"Pod pending":  {&fakeNodes{}, corev1.PodPending, "not Running"},
	} {
		t.Run(name, func(t *testing.T) {
			r, c, rec, sb, pod := memoryReconciler(t, tc.nodes)
			sb.Status.Memory = &sandboxv1beta1.MemoryStatus{Snapshot: "older", NodeName: "node-a", Image: "/x"}
			if err := c.Status().Update(t.Context(), sb); err != nil {
				t.Fatal(err)
			}
			pod.Status.Phase = tc.phase
			if err := r.keepMemory(t.Context(), sb, pod); err != nil {
				t.Fatal(err)
			}
			stored := &sandboxv1beta1.Sandbox{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(stored.Status.Conditions, sandboxv1beta1.SandboxConditionMemoryKept)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != sandboxv1beta1.SandboxReasonCheckpointFailed || !strings.Contains(cond.Message, tc.want) {
				t.Errorf("MemoryKept = %+v, want False/CheckpointFailed saying %q", cond, tc.want)
			}
			if stored.Status.Memory != nil {
				t.Errorf("status.memory = %+v after a failed checkpoint: the next Pod must not restore an older snapshot", stored.Status.Memory)
			}
			if ev := <-rec.Events; !strings.Contains(ev, "Warning MemoryNotKept") {
				t.Errorf("event %q, want Warning MemoryNotKept", ev)
			}
		})
	}
}

func TestResumeFromMemory(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sb := withMeta(testSandbox().Obj())
	sb.Spec.SuspendPolicy = &sandboxv1beta1.SuspendPolicy{KeepMemory: true}
	build := func() *corev1.Pod {
		p := testPod().Obj()
		p.Spec.InitContainers = []corev1.Container{{Name: AgentInitContainerName}, {Name: "sidecar", RestartPolicy: &always}}
		return p
	}
	fresh := build()
	resumeFromMemory(sb, fresh)
	if fresh.Annotations[contract.RestoreImageAnnotation] != "" || len(fresh.Spec.InitContainers) != 2 {
		t.Errorf("without status.memory the Pod is a fresh one: %v, %d init containers", fresh.Annotations, len(fresh.Spec.InitContainers))
	}
	sb.Status.Memory = &sandboxv1beta1.MemoryStatus{Snapshot: "pod-uid-1", NodeName: "node-a", Image: "/snapshots/team-a/pod-uid-1/image",
		TakenAt: &testEarlier}
	restored := build()
	resumeFromMemory(sb, restored)
	if restored.Annotations[contract.RestoreImageAnnotation] != "/snapshots/team-a/pod-uid-1/image" || restored.Spec.NodeName != "" ||
		len(restored.Spec.InitContainers) != 1 || restored.Spec.InitContainers[0].Name != "sidecar" {
		t.Errorf("restored Pod: annotations %v, node %q, init containers %v; want the image, no node (placeRestore's) and the sidecar only",
			restored.Annotations, restored.Spec.NodeName, restored.Spec.InitContainers)
	}
	obs := &observed{pod: restored}
	if c := restoredCondition(sb, obs); c != nil {
		t.Errorf("MemoryKept before the restored Pod is Ready: %+v, want none", c)
	}
	restored.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if c := restoredCondition(sb, obs); c == nil || c.Reason != sandboxv1beta1.SandboxReasonRestored || c.Status != metav1.ConditionTrue {
		t.Errorf("MemoryKept once the restored Pod is Ready: %+v, want True/Restored", c)
	}
	sb.Spec.SuspendPolicy = nil
	plain := build()
	resumeFromMemory(sb, plain)
	if plain.Annotations[contract.RestoreImageAnnotation] != "" {
		t.Error("a Sandbox that no longer keeps its memory resumed from its snapshot")
	}
}

func TestRestoreFailure(t *testing.T) {
	created := testNow.Add(-time.Minute)
	restoring := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := testPod().Obj()
		p.Annotations = map[string]string{contract.RestoreImageAnnotation: "/s/image"}
		p.CreationTimestamp = metav1.NewTime(created)
		p.Spec.NodeName = "node-a"
		p.Status.Phase = corev1.PodPending
		mutate(p)
		return p
	}
	for name, tc := range map[string]struct {
		pod      *corev1.Pod
		want     string
		wantWait time.Duration
	}{
		"pending, before the deadline": {restoring(func(*corev1.Pod) {}), "", restoreDeadline - time.Minute},
		"pending past the deadline": {restoring(func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(testNow.Add(-2 * time.Minute)) }),
			"did not start within", 0},
		"not scheduled, long after its creation": {restoring(func(p *corev1.Pod) {
			p.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
			p.Spec.NodeName = ""
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
		}), "", 0},
		"scheduled late, before the deadline": {restoring(func(p *corev1.Pod) {
			p.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(testNow.Add(-time.Minute))}}
		}), "", restoreDeadline - time.Minute},
		"a container failed to start": {restoring(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", LastTerminationState: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "StartError", Message: "OCI runtime restore failed: bad image"}}}}
		}), "container main: OCI runtime restore failed: bad image", 0},
		"restored and Ready": {restoring(func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}), "", 0},
		"not a restore": {restoring(func(p *corev1.Pod) { p.Annotations = nil }), "", 0},
	} {
		t.Run(name, func(t *testing.T) {
			why, wait := restoreFailure(tc.pod, testNow.Time)
			if (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) || wait != tc.wantWait {
				t.Errorf("restoreFailure = %q, %v; want %q, %v", why, wait, tc.want, tc.wantWait)
			}
		})
	}
}

func TestFailRestoreSuspendsAgainWithTheSnapshot(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	sb.Spec.SuspendPolicy = &sandboxv1beta1.SuspendPolicy{KeepMemory: true}
	sb.Status.Memory = &sandboxv1beta1.MemoryStatus{Snapshot: "pod-uid-1", NodeName: "node-a", Image: "/s/image"}
	pod := testPod().Obj()
	pod.UID = "pod-uid-2"
	pod.Annotations = map[string]string{contract.RestoreImageAnnotation: "/s/image"}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(sb, pod).WithStatusSubresource(sb).Build()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), sb); err != nil {
		t.Fatal(err)
	}
	rec := events.NewFakeRecorder(10)
	clk := clocktesting.NewFakePassiveClock(testNow.Time)
	nodes := &fakeNodes{}
	r := &Reconciler{client: c, recorder: rec, clock: clk, sandboxes: inflight.NewVersions(clk), pods: inflight.NewVersions(clk), nodes: nodes,
		status: status.NewWriter(c, rec, FieldManager, "Sandbox")}
	if err := r.failRestore(t.Context(), sb, &observed{pod: pod, ownedPods: 1}, "container main: OCI runtime restore failed"); err != nil {
		t.Fatal(err)
	}
	stored := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended ||
		stored.Annotations[sandboxv1beta1.SuspendedByAnnotation] != sandboxv1beta1.SuspendedByRestoreFailure {
		t.Errorf("spec.operatingMode %q, suspended-by %q: want Suspended by the restore failure", stored.Spec.OperatingMode,
			stored.Annotations[sandboxv1beta1.SuspendedByAnnotation])
	}
	cond := meta.FindStatusCondition(stored.Status.Conditions, sandboxv1beta1.SandboxConditionMemoryKept)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != sandboxv1beta1.SandboxReasonRestoreFailed ||
		!strings.Contains(cond.Message, "OCI runtime restore failed") || !strings.Contains(cond.Message, "keepMemory to false") {
		t.Errorf("MemoryKept = %+v, want False/RestoreFailed with the reason and the way out", cond)
	}
	if stored.Status.Memory == nil || stored.Status.Memory.Snapshot != "pod-uid-1" || len(nodes.checkpoints) != 0 {
		t.Errorf("status.memory %+v, %d checkpoints: want the snapshot kept and the failed Pod not checkpointed", stored.Status.Memory, len(nodes.checkpoints))
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); err == nil {
		t.Error("the Pod that failed to restore is still there")
	}
	if ev := <-rec.Events; !strings.Contains(ev, "Warning RestoreFailed") {
		t.Errorf("event %q, want Warning RestoreFailed", ev)
	}
}

// TestStartFromSnapshot checks that a Sandbox with spec.snapshotRef waits, saying why, while the
// SandboxSnapshot is missing or not Ready, and that its Pod then starts from it (placeRestore places it).
func TestStartFromSnapshot(t *testing.T) {
	sb := withMeta(testSandbox().Obj())
	sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "warm"}
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "warm"}}
	ready := func(typ extv1beta1.SnapshotType) *extv1beta1.SandboxSnapshot {
		s := snap.DeepCopy()
		s.Spec.Type = typ
		s.Status.Conditions = []metav1.Condition{{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionTrue, Reason: extv1beta1.SnapshotReasonTaken}}
		s.Status.Snapshot = &sandboxv1beta1.MemoryStatus{Snapshot: "snap-uid", NodeName: "node-b", Image: "/snapshots/team-a/snap-uid/image"}
		return s
	}
	held := func(typ extv1beta1.SnapshotType) *extv1beta1.SandboxSnapshot {
		s := ready(typ)
		s.Status.SourceClaim = &extv1beta1.SnapshotSourceClaim{Name: "alice", UID: "alice-uid", Env: true}
		return s
	}
	for name, tc := range map[string]struct {
		snap      *extv1beta1.SandboxSnapshot
		labels    map[string]string // the Sandbox's
		wantWait  string
		wantImage string
		wantInit  int // init containers the Pod keeps
	}{
		// A snapshot holding claim alice's env serves alice and forks, no pool member or other claim.
		"held by a claim, a pool member": {snap: held(extv1beta1.SnapshotTypeFull), labels: map[string]string{sandboxv1beta1.WarmPoolSandboxLabel: "h"},
			wantWait: "SandboxSnapshot warm holds the spec.env of SandboxClaim alice, which a restore would hand to whichever claim takes this warm pool member: " +
				"snapshot a sandbox that serves no claim with spec.env or spec.secretFiles (such as a warm pool member before it is claimed), " +
				"or take a Filesystem snapshot (it holds no process memory), and name that snapshot instead"},
		"held by a claim, another claim": {snap: held(extv1beta1.SnapshotTypeFull), labels: map[string]string{sandboxv1beta1.ClaimUIDLabel: "bob-uid"},
			wantWait: "SandboxSnapshot warm holds the spec.env of SandboxClaim alice, which a restore would hand to this Sandbox's claim: " +
				"snapshot a sandbox that serves no claim with spec.env or spec.secretFiles (such as a warm pool member before it is claimed), " +
				"or take a Filesystem snapshot (it holds no process memory), and name that snapshot instead"},
		"held by a claim, the same claim": {snap: held(extv1beta1.SnapshotTypeFull), labels: map[string]string{sandboxv1beta1.ClaimUIDLabel: "alice-uid"},
			wantImage: "/snapshots/team-a/snap-uid/image"},
		"held by a claim, a fork": {snap: held(extv1beta1.SnapshotTypeFull), wantImage: "/snapshots/team-a/snap-uid/image"},
		"env held, Filesystem, another": {snap: held(extv1beta1.SnapshotTypeFilesystem), labels: map[string]string{sandboxv1beta1.ClaimUIDLabel: "bob-uid"},
			wantImage: "/snapshots/team-a/snap-uid/image", wantInit: 1},
		"missing": {wantWait: "SandboxSnapshot warm, which spec.snapshotRef names, does not exist"},
		"failed": {
			snap: func() *extv1beta1.SandboxSnapshot {
				s := snap.DeepCopy()
				s.Status.Conditions = []metav1.Condition{{Type: extv1beta1.SnapshotConditionReady, Status: metav1.ConditionFalse,
					Reason: extv1beta1.SnapshotReasonCheckpointFailed, Message: "not gVisor"}}
				return s
			}(),
			wantWait: "SandboxSnapshot warm, which spec.snapshotRef names, is not Ready: not gVisor",
		},
		// The finished agent install is left out: the restore brings its work back.
		"ready":      {snap: ready(extv1beta1.SnapshotTypeFull), wantImage: "/snapshots/team-a/snap-uid/image"},
		"ready, old": {snap: ready(""), wantImage: "/snapshots/team-a/snap-uid/image"},
		// Started afresh on the snapshot's files: the agent install runs again.
		"filesystem": {snap: ready(extv1beta1.SnapshotTypeFilesystem), wantImage: "/snapshots/team-a/snap-uid/image", wantInit: 1},
	} {
		t.Run(name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(testScheme(t))
			if tc.snap != nil {
				b = b.WithObjects(tc.snap)
			}
			r := &Reconciler{client: b.Build()}
			pod := testPod().Obj()
			pod.Spec.InitContainers = []corev1.Container{{Name: AgentInitContainerName}}
			sb := sb.DeepCopy()
			sb.Labels = tc.labels
			from, why, err := r.startFromSnapshot(t.Context(), sb, pod)
			if err != nil || why != tc.wantWait {
				t.Fatalf("startFromSnapshot() = %q, %v; want %q", why, err, tc.wantWait)
			}
			if got := pod.Annotations[contract.RestoreImageAnnotation]; got != tc.wantImage {
				t.Errorf("restore image %q, want %q", got, tc.wantImage)
			}
			if tc.wantImage != "" && (from.NodeName != "node-b" || pod.Spec.NodeName != "" || len(pod.Spec.InitContainers) != tc.wantInit) {
				t.Errorf("snapshot on %q, Pod on %q with init containers %v; want node-b's snapshot, the Pod placed by placeRestore, with %d",
					from.NodeName, pod.Spec.NodeName, pod.Spec.InitContainers, tc.wantInit)
			}
			obs := &observed{snapshotWait: why}
			if c := readyCondition(sb, obs); why != "" && (c.Reason != sandboxv1beta1.SandboxReasonSnapshotNotReady || c.Message != why) {
				t.Errorf("Ready = %+v while waiting; want SnapshotNotReady saying why", c)
			}
		})
	}
}

// TestDeletedSandboxDeletesItsMemorySnapshot checks that keepMemory puts the finalizer on before
// the snapshot exists, and that the deletion of the Sandbox deletes the snapshot from its node
// (found by the Node's InternalIP) before the finalizer goes.
func TestDeletedSandboxDeletesItsMemorySnapshot(t *testing.T) {
	nodes := &fakeNodes{}
	r, c, _, sb := checkpointedOnNode(t, nodes)
	stored := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(stored.Finalizers, MemorySnapshotFinalizer) || stored.Status.Memory == nil {
		t.Fatalf("after the checkpoint: finalizers %v, memory %+v; want the finalizer and the snapshot", stored.Finalizers, stored.Status.Memory)
	}
	if err := c.Delete(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	if err := r.finalize(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	if len(nodes.deleted) != 1 || nodes.deleted[0] != "team-a/pod-uid-1" {
		t.Errorf("deleted %v; want the snapshot team-a/pod-uid-1", nodes.deleted)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); !apierrors.IsNotFound(err) {
		t.Errorf("the Sandbox after its snapshot was deleted: %v, finalizers %v; want it gone", err, stored.Finalizers)
	}
}

// TestResumeWithoutKeepMemoryDiscardsTheSnapshot: a Sandbox holding a memory snapshot that resumes
// with keepMemory turned off deletes the snapshot from its node and clears status.memory and
// MemoryKept before its fresh Pod; a node that refuses the delete keeps both.
func TestResumeWithoutKeepMemoryDiscardsTheSnapshot(t *testing.T) {
	nodes := &fakeNodes{}
	r, c, _, sb := checkpointedOnNode(t, nodes)
	stored := &sandboxv1beta1.Sandbox{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	stored.Spec.SuspendPolicy.KeepMemory = false
	if fresh := testPod().Obj(); resumeFromMemory(stored, fresh) {
		t.Fatal("resumeFromMemory with keepMemory off shaped the Pod for a restore")
	}
	if err := r.dropMemory(t.Context(), stored.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if len(nodes.deleted) != 1 || nodes.deleted[0] != "team-a/pod-uid-1" {
		t.Errorf("deleted %v; want the snapshot team-a/pod-uid-1", nodes.deleted)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.Memory != nil || meta.FindStatusCondition(stored.Status.Conditions, sandboxv1beta1.SandboxConditionMemoryKept) != nil {
		t.Errorf("status after the discard: memory %+v, conditions %+v; want neither", stored.Status.Memory, stored.Status.Conditions)
	}
}

// TestDiscardWithTheNodeDownSaysWhatIsLeft: kubox-node refusing the delete does not hold the fresh
// start back; a Warning names the files left on the node.
func TestDiscardWithTheNodeDownSaysWhatIsLeft(t *testing.T) {
	r, _, rec, sb := checkpointedOnNode(t, &fakeNodes{})
	<-rec.Events
	r.nodes = &refusingDeletes{}
	if err := r.dropMemory(t.Context(), sb); err != nil || sb.Status.Memory != nil {
		t.Fatalf("dropMemory with kubox-node down: %v, memory %+v; want the memory cleared all the same", err, sb.Status.Memory)
	}
	if ev := <-rec.Events; !strings.Contains(ev, "Warning SnapshotNotDeleted") || !strings.Contains(ev, "team-a/pod-uid-1") {
		t.Errorf("event %q; want a Warning naming the snapshot folder left on the node", ev)
	}
}

// refusingDeletes is kubox-node failing every delete.
type refusingDeletes struct{ fakeNodes }

func (refusingDeletes) DeleteSnapshot(context.Context, string, string, string) error {
	return errors.New("connection refused")
}

// TestKeepMemoryWriteComesFirst checks the rule that status.memory is in the API server before
// the Pod goes: a memory write that meets a newer version of the Sandbox fails the pass (so the
// suspend does not delete the Pod) and emits no MemoryKept event; and without kubox-node no
// finalizer is taken for a snapshot that cannot exist.
func TestKeepMemoryWriteComesFirst(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes         nodeapi.Client
		stale         bool
		wantErr       bool
		wantFinalizer bool
		wantEvent     string
	}{
		"written":                   {nodes: &fakeNodes{}, wantFinalizer: true, wantEvent: "Normal MemoryKept"},
		"a newer Sandbox":           {nodes: &fakeNodes{}, stale: true, wantErr: true, wantFinalizer: true},
		"kubox-node not configured": {wantEvent: "Warning MemoryNotKept"},
	} {
		t.Run(name, func(t *testing.T) {
			r, c, rec, sb, pod := memoryReconciler(t, tc.nodes)
			if tc.stale {
				// The status write meets a newer version of the Sandbox.
				r.status = status.NewWriter(interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{
					SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
						return apierrors.NewConflict(schema.GroupResource{Group: sandboxv1beta1.GroupVersion.Group, Resource: "sandboxes"}, sb.Name, errors.New("newer version"))
					}}), rec, FieldManager, "Sandbox")
			}
			err := r.keepMemory(t.Context(), sb, pod)
			if (err != nil) != tc.wantErr {
				t.Fatalf("keepMemory = %v; want an error %t", err, tc.wantErr)
			}
			stored := &sandboxv1beta1.Sandbox{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(sb), stored); err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(stored.Finalizers, MemorySnapshotFinalizer); got != tc.wantFinalizer {
				t.Errorf("finalizer %s: %t, want %t", MemorySnapshotFinalizer, got, tc.wantFinalizer)
			}
			var got string
			select {
			case got = <-rec.Events:
			default:
			}
			if !strings.Contains(got, tc.wantEvent) || (tc.wantEvent == "") != (got == "") {
				t.Errorf("event %q, want %q", got, tc.wantEvent)
			}
		})
	}
}
