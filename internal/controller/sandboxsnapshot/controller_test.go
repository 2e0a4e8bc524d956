package sandboxsnapshot

import (
	"context"
	"errors"
	"strings"
	"testing"

	"time"

	"github.com/google/go-cmp/cmp"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/controller/indexer"
	"github.com/kubox-dev/kubox/internal/controller/nodeapi"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
)

const ns = "team-a"

var now = time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)

// fakeNodes is kubox-node answering with a snapshot named as asked.
type fakeNodes struct {
	checkpoints []*nodev1.CheckpointRequest
	hosts       []string
	deleted     []string
}

func (f *fakeNodes) Checkpoint(_ context.Context, hostIP string, req *nodev1.CheckpointRequest) (*nodev1.Snapshot, error) {
	f.checkpoints, f.hosts = append(f.checkpoints, req), append(f.hosts, hostIP)
	return &nodev1.Snapshot{Namespace: req.GetNamespace(), Name: req.GetSnapshot(), Image: "/snapshots/" + req.GetSnapshot() + "/image",
		SizeBytes: 5 << 20, Sha256: "f00d", Duration: durationpb.New(300 * time.Millisecond), CreateTime: timestamppb.New(now)}, nil
}

func (f *fakeNodes) DeleteSnapshot(_ context.Context, hostIP, namespace, snapshot string) error {
	f.deleted = append(f.deleted, hostIP+" "+namespace+"/"+snapshot)
	return nil
}

func (f *fakeNodes) Fetch(context.Context, string, string, string) (*nodev1.FetchSnapshotResponse, error) {
	return nil, errors.New("the SandboxSnapshot controller never fetches")
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(sandboxv1beta1.AddToScheme(s))
	utilruntime.Must(extv1beta1.AddToScheme(s))
	return s
}

// world is a SandboxSnapshot of Sandbox "src", and, with running, the Sandbox and its Running
// Pod on node-a (192.0.2.7).
func world(t *testing.T, nodes nodeapi.Client, running bool) (*Reconciler, client.Client) {
	t.Helper()
	snap := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s1", UID: "snap-uid"},
		Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: "src"}}}
	objs := []client.Object{snap, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: "a"}, {Type: corev1.NodeInternalIP, Address: "192.0.2.7"}}}}}
	if running {
		sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src", UID: "sb-uid"}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src", UID: "pod-uid",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "src", UID: "sb-uid", Controller: ptr.To(true)}}},
			Spec:   corev1.PodSpec{NodeName: "node-a"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "192.0.2.7"}}
		objs = append(objs, sb, pod)
	}
	c := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(objs...).WithStatusSubresource(snap).
		WithIndex(&corev1.Pod{}, indexer.RestoreImageKey, indexer.RestoreImage).Build()
	if nodes == nil {
		nodes = nodeapi.NotConfigured()
	}
	return NewReconciler(c, c, events.NewFakeRecorder(10), clocktesting.NewFakePassiveClock(now), nodes), c
}

func reconcile(t *testing.T, r *Reconciler) ctrl.Result {
	t.Helper()
	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "s1"}})
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func read(t *testing.T, c client.Client) *extv1beta1.SandboxSnapshot {
	t.Helper()
	s := &extv1beta1.SandboxSnapshot{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "s1"}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFilesystemSnapshot: spec.type Filesystem asks kubox-node for the files only.
func TestFilesystemSnapshot(t *testing.T) {
	nodes := &fakeNodes{}
	r, c := world(t, nodes, true)
	s := read(t, c)
	s.Spec.Type = extv1beta1.SnapshotTypeFilesystem
	if err := c.Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	reconcile(t, r)
	if len(nodes.checkpoints) != 1 || nodes.checkpoints[0].GetKind() != nodev1.Kind_KIND_FILESYSTEM || !nodes.checkpoints[0].GetLeaveRunning() {
		t.Fatalf("checkpoints %v; want one of the files only, the sandbox left running", nodes.checkpoints)
	}
	ready := meta.FindStatusCondition(read(t, c).Status.Conditions, extv1beta1.SnapshotConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || !strings.HasPrefix(ready.Message, "Saved the files of Pod src") {
		t.Errorf("Ready = %+v; want True, saying the files were saved", ready)
	}
}

func TestSnapshotOfARunningSandbox(t *testing.T) {
	nodes := &fakeNodes{}
	r, c := world(t, nodes, true)
	reconcile(t, r)
	if len(nodes.checkpoints) != 1 || nodes.hosts[0] != "192.0.2.7" {
		t.Fatalf("checkpoints %v on %v; want one, on the Pod's node", nodes.checkpoints, nodes.hosts)
	}
	if req := nodes.checkpoints[0]; req.GetPod() != "src" || req.GetPodUid() != "pod-uid" || req.GetSnapshot() != "snap-uid" || !req.GetLeaveRunning() ||
		req.GetKind() != nodev1.Kind_KIND_FULL {
		t.Errorf("checkpoint request %v; want a full checkpoint of Pod src by its UID, named by the SandboxSnapshot's UID, left running", req)
	}
	s := read(t, c)
	ready, _ := extv1beta1.SnapshotReady(s)
	if ready == nil || ready.NodeName != "node-a" || ready.Image != "/snapshots/snap-uid/image" || ready.SHA256 != "f00d" || ready.SizeBytes != 5<<20 || s.Status.SourcePodUID != "pod-uid" {
		t.Fatalf("status %+v; want Ready with the snapshot on node-a", s.Status)
	}
	if !strings.Contains(meta.FindStatusCondition(s.Status.Conditions, extv1beta1.SnapshotConditionReady).Message, "5.0 MiB") {
		t.Errorf("Ready message %q; want the size", s.Status.Conditions[0].Message)
	}
	reconcile(t, r)
	if len(nodes.checkpoints) != 1 {
		t.Errorf("%d checkpoints after a second pass; a snapshot is taken once", len(nodes.checkpoints))
	}

	// Deleted, it deletes its files from its node, by the node's internal address.
	if err := c.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	reconcile(t, r)
	if len(nodes.deleted) != 1 || nodes.deleted[0] != "192.0.2.7 team-a/snap-uid" {
		t.Errorf("deleted %v; want team-a/snap-uid on 192.0.2.7", nodes.deleted)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "s1"}, &extv1beta1.SandboxSnapshot{}); !apierrors.IsNotFound(err) {
		t.Errorf("SandboxSnapshot after its files were deleted: %v; want it gone", err)
	}
}

func TestSnapshotWaitsForItsSandbox(t *testing.T) {
	nodes := &fakeNodes{}
	r, c := world(t, nodes, false)
	if res := reconcile(t, r); res.RequeueAfter == 0 {
		t.Error("no requeue while the Sandbox does not exist")
	}
	c1 := meta.FindStatusCondition(read(t, c).Status.Conditions, extv1beta1.SnapshotConditionReady)
	if c1 == nil || c1.Reason != extv1beta1.SnapshotReasonSandboxNotRunning || c1.Message != "Sandbox src does not exist" || len(nodes.checkpoints) != 0 {
		t.Errorf("Ready = %+v after %d checkpoints; want SandboxNotRunning naming src, none", c1, len(nodes.checkpoints))
	}
}

func TestSnapshotWithoutKuboxNodeFailsForGood(t *testing.T) {
	r, c := world(t, nil, true)
	reconcile(t, r)
	s := read(t, c)
	c1 := meta.FindStatusCondition(s.Status.Conditions, extv1beta1.SnapshotConditionReady)
	if c1 == nil || c1.Reason != extv1beta1.SnapshotReasonCheckpointFailed || !strings.Contains(c1.Message, "controllers.sandbox.memory.tokenFile") {
		t.Fatalf("Ready = %+v; want CheckpointFailed naming the missing setting", c1)
	}
	if res := reconcile(t, r); res.RequeueAfter != 0 {
		t.Errorf("a failed snapshot requeued after %s; it is not retried", res.RequeueAfter)
	}
	// Its deletion asks no node for files it never had.
	if err := c.Delete(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	reconcile(t, r)
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "s1"}, &extv1beta1.SandboxSnapshot{}); !apierrors.IsNotFound(err) {
		t.Errorf("failed SandboxSnapshot after its deletion: %v; want it gone", err)
	}
}

// TestOwnVolumeMounts: the mounts of the sandbox's own claims (its volumeClaimTemplates) are the
// ones copied into a snapshot, in every container that runs; a claim the template shares, and a
// finished init container's mount, are not.
func TestOwnVolumeMounts(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "src"}}
	sb.Spec.VolumeClaimTemplates = []sandboxv1beta1.PersistentVolumeClaimTemplate{{Metadata: sandboxv1beta1.EmbeddedObjectMetadata{Name: "data"}}}
	sb.Spec.PodTemplate.Spec = corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "team-cache"}}}},
		InitContainers: []corev1.Container{
			{Name: "seed", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}},
			{Name: "sidecar", RestartPolicy: &always, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/data/"}}},
		},
		Containers: []corev1.Container{{Name: "main", VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: "/workspace"}, {Name: "shared", MountPath: "/cache"}}}},
	}
	var got []string
	for _, m := range ownVolumeMounts(sb) {
		got = append(got, m.GetContainer()+":"+m.GetPath())
	}
	if diff := cmp.Diff([]string{"sidecar:/var/data", "main:/workspace"}, got); diff != "" {
		t.Errorf("mounts copied (-want +got):\n%s", diff)
	}
}

// TestSourceClaim: a snapshot records the claim whose env or secret files its sandbox holds, the
// claim it serves or the one its own snapshot held (a fork of a claimed sandbox), so no other
// claim starts from it; a claim it cannot read is assumed to have set both.
func TestSourceClaim(t *testing.T) {
	claim := func(env, files bool) *extv1beta1.SandboxClaim {
		c := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice", UID: "claim-uid"}}
		if env {
			c.Spec.Env = []extv1beta1.EnvVar{{Name: "OPENAI_API_KEY", Value: "sk-alice"}}
		}
		if files {
			c.Spec.SecretFiles = []extv1beta1.SecretFile{{SecretName: "alice-creds", MountPath: "/run/secrets"}}
		}
		return c
	}
	claimed := func(sb *sandboxv1beta1.Sandbox) {
		sb.Labels = map[string]string{sandboxv1beta1.ClaimUIDLabel: "claim-uid"}
		sb.OwnerReferences = []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim", Name: "alice",
			UID: "claim-uid", Controller: ptr.To(true)}}
	}
	forked := func(sb *sandboxv1beta1.Sandbox) {
		sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "parent"}
	}
	parent := &extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"},
		Status: extv1beta1.SandboxSnapshotStatus{SourceClaim: &extv1beta1.SnapshotSourceClaim{Name: "alice", UID: "claim-uid", Env: true}}}
	for name, tc := range map[string]struct {
		sandbox func(*sandboxv1beta1.Sandbox)
		objs    []client.Object
		want    *extv1beta1.SnapshotSourceClaim
	}{
		"no claim":              {sandbox: func(*sandboxv1beta1.Sandbox) {}},
		"a claim with env":      {sandbox: claimed, objs: []client.Object{claim(true, false)}, want: &extv1beta1.SnapshotSourceClaim{Name: "alice", UID: "claim-uid", Env: true}},
		"a claim with files":    {sandbox: claimed, objs: []client.Object{claim(false, true)}, want: &extv1beta1.SnapshotSourceClaim{Name: "alice", UID: "claim-uid", SecretFiles: true}},
		"a claim with neither":  {sandbox: claimed, objs: []client.Object{claim(false, false)}},
		"a claim that is gone":  {sandbox: claimed, want: &extv1beta1.SnapshotSourceClaim{Name: "alice", UID: "claim-uid", Env: true, SecretFiles: true}},
		"a fork of a claimed":   {sandbox: forked, objs: []client.Object{parent}, want: parent.Status.SourceClaim},
		"a fork, parent gone":   {sandbox: forked, want: &extv1beta1.SnapshotSourceClaim{Env: true, SecretFiles: true}},
		"a fork of a clean one": {sandbox: forked, objs: []client.Object{&extv1beta1.SandboxSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "parent"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			sb := &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "src"}}
			tc.sandbox(sb)
			c := fake.NewClientBuilder().WithScheme(scheme()).WithObjects(tc.objs...).Build()
			got, err := (&Reconciler{client: c}).sourceClaim(t.Context(), sb)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sourceClaim (-want +got):\n%s", diff)
			}
		})
	}
}
