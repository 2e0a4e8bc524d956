package sandboxclaim

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// The attack tests of config/admission's snapshot, egress-credential and restore-annotation
// policies (issue #36, holes 1, 3 and 4). Each tenant is a ServiceAccount with exactly the rules
// a test gives it: create rights on the kind it writes, and get (or connect) on one object only.

// tenant returns a client for ServiceAccount name of ns, allowed exactly rules, and its user name.
func tenant(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) (client.Client, string) {
	t.Helper()
	token := env.ServiceAccountToken(t, ns, name)
	env.Grant(t, ns, name, name, rules...)
	c, err := client.New(env.ConfigFor(token), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, "system:serviceaccount:" + ns + ":" + name
}

// writeRules allow create, update and patch on resources of group.
func writeRules(group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: []string{"create", "update", "patch"}}
}

// getRule allows get on the named objects of resource in group.
func getRule(group, resource string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{"get"}, ResourceNames: names}
}

// byPolicy reports whether err is a ValidatingAdmissionPolicy's refusal (not RBAC's, which comes
// while a new grant has not reached the authorizer).
func byPolicy(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
}

// admittedEventually retries fn until neither RBAC nor an admission policy refuses it: the
// policies ask the same authorizer, which sees a new grant in the background.
func admittedEventually(t *testing.T, what string, fn func() error) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		err := fn()
		return err == nil, what + ": " + errString(err)
	})
}

// wantRefused checks that write (a dry run) is refused by an admission policy with a message
// containing each of want. It retries while the write is accepted: the API server loads new
// policies, and RBAC grants, in the background.
func wantRefused(t *testing.T, what string, write func() error, want ...string) {
	t.Helper()
	var err error
	framework.Eventually(t, func() (bool, string) {
		err = write()
		return byPolicy(err), what + ": " + errString(err) + "; want an admission policy's Forbidden"
	})
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v; want it to say %q", what, err, w)
		}
	}
}

// touch adds a label: an update that leaves every reference as it was.
func touch(t *testing.T, c client.Client, obj client.Object) error {
	t.Helper()
	return c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"touched":"yes"}}}`)))
}

// replaceSpec updates (a dry run) the stored object named like obj to obj's spec, as c.
func replaceSpec(t *testing.T, c client.Client, obj client.Object) error {
	t.Helper()
	stored := obj.DeepCopyObject().(client.Object)
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), stored); err != nil {
		t.Fatal(err)
	}
	obj.SetResourceVersion(stored.GetResourceVersion())
	return c.Update(t.Context(), obj, client.DryRunAll)
}

// snapshotNamers make an object of each kind whose spec.snapshotRef a tenant writes.
var snapshotNamers = map[string]func(name, ns, snapshot string) client.Object{
	"SandboxClaim": func(name, ns, snapshot string) client.Object {
		c := testutil.MakeClaim(name, ns).Template("python").Obj()
		c.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: snapshot}
		return c
	},
	"Sandbox": func(name, ns, snapshot string) client.Object {
		sb := testutil.MakeSandbox(name, ns).Obj()
		sb.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: snapshot}
		return sb
	},
	"SandboxTemplate": func(name, ns, snapshot string) client.Object {
		tpl := testutil.MakeTemplate(name, ns).Obj()
		tpl.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: snapshot}
		return tpl
	},
}

// TestAdmissionRefusesSnapshotsTheRequesterCannotRead (hole 3): a tenant who may create claims,
// Sandboxes and templates but get only SandboxSnapshot readable cannot start anything from
// SandboxSnapshot hidden (another user's memory and files), can from readable, and is not
// checked again on an update that keeps the reference an administrator set.
func TestAdmissionRefusesSnapshotsTheRequesterCannotRead(t *testing.T) {
	ns := env.NewNamespace(t)
	as, user := tenant(t, ns, "snapshot-user",
		writeRules(extv1beta1.GroupVersion.Group, "sandboxclaims", "sandboxtemplates"),
		writeRules(sandboxv1beta1.GroupVersion.Group, "sandboxes"),
		getRule(extv1beta1.GroupVersion.Group, "sandboxsnapshots", "readable"))
	for kind, build := range snapshotNamers {
		t.Run(kind, func(t *testing.T) {
			name := strings.ToLower(kind)
			admittedEventually(t, kind+" naming readable", func() error {
				return as.Create(t.Context(), build(name+"-readable", ns, "readable"), client.DryRunAll)
			})
			wantRefused(t, kind+" naming hidden", func() error {
				return as.Create(t.Context(), build(name+"-hidden", ns, "hidden"), client.DryRunAll)
			}, kind+" "+name+"-hidden: spec.snapshotRef: "+user+
				" may not get SandboxSnapshot hidden in namespace "+ns, "get on sandboxsnapshots")

			kept := build(name+"-kept", ns, "hidden")
			env.Create(t, kept) // the administrator may read every snapshot
			if err := touch(t, as, kept); err != nil {
				t.Errorf("%s naming hidden, set by the administrator, updated by %s without changing it: %v; want it accepted", kind, user, err)
			}
			wantRefused(t, kind+" changed to name also-hidden", func() error {
				return replaceSpec(t, as, build(name+"-kept", ns, "also-hidden"))
			}, "may not get SandboxSnapshot also-hidden")
		})
	}
}

// TestAdmissionRefusesSnapshotsOfSandboxesTheRequesterCannotConnectTo (hole 3): a tenant who may
// create SandboxSnapshots and connect only to Sandbox mine cannot snapshot Sandbox theirs (and
// so read its memory and files), and can snapshot mine.
func TestAdmissionRefusesSnapshotsOfSandboxesTheRequesterCannotConnectTo(t *testing.T) {
	ns := env.NewNamespace(t)
	as, user := tenant(t, ns, "snapshotter",
		writeRules(extv1beta1.GroupVersion.Group, "sandboxsnapshots"),
		framework.ConnectRule(sandboxv1beta1.GroupVersion.Group, "sandboxes", "mine"))
	snapshotOf := func(name, sandbox string) *extv1beta1.SandboxSnapshot {
		s := &extv1beta1.SandboxSnapshot{Spec: extv1beta1.SandboxSnapshotSpec{SandboxRef: extv1beta1.SnapshotSourceReference{Name: sandbox}}}
		s.Name, s.Namespace = name, ns
		return s
	}
	admittedEventually(t, "a snapshot of Sandbox mine", func() error {
		return as.Create(t.Context(), snapshotOf("of-mine", "mine"), client.DryRunAll)
	})
	wantRefused(t, "a snapshot of Sandbox theirs", func() error {
		return as.Create(t.Context(), snapshotOf("of-theirs", "theirs"), client.DryRunAll)
	}, "SandboxSnapshot of-theirs: spec.sandboxRef: "+user+
		" may not connect to Sandbox theirs in namespace "+ns, "create on sandboxes/connect")

	kept := snapshotOf("kept", "theirs")
	env.Create(t, kept)
	if err := touch(t, as, kept); err != nil {
		t.Errorf("SandboxSnapshot kept of Sandbox theirs, made by the administrator, labelled by %s: %v; want it accepted", user, err)
	}
}

// credentialNamers make an object of each kind whose spec.egress.credentials a tenant writes,
// one credential per Secret.
var credentialNamers = map[string]func(name, ns string, secrets ...string) client.Object{
	"SandboxClaim": func(name, ns string, secrets ...string) client.Object {
		c := testutil.MakeClaim(name, ns).Template("python").Obj()
		c.Spec.Egress = &sandboxv1beta1.EgressRestriction{Credentials: credentials(secrets)}
		return c
	},
	"Sandbox": func(name, ns string, secrets ...string) client.Object {
		sb := testutil.MakeSandbox(name, ns).Obj()
		sb.Spec.Egress = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"api.test"}, Credentials: credentials(secrets)}
		return sb
	},
	"SandboxTemplate": func(name, ns string, secrets ...string) client.Object {
		tpl := testutil.MakeTemplate(name, ns).Obj()
		tpl.Spec.Egress = &sandboxv1beta1.EgressPolicy{AllowDomains: []string{"api.test"}, Credentials: credentials(secrets)}
		return tpl
	},
}

func credentials(secrets []string) []sandboxv1beta1.EgressCredential {
	var out []sandboxv1beta1.EgressCredential
	for _, s := range secrets {
		out = append(out, sandboxv1beta1.EgressCredential{SecretRef: sandboxv1beta1.SecretKeyReference{Name: s, Key: "token"},
			Header: "Authorization", Domains: []string{"api.test"}})
	}
	return out
}

// TestAdmissionRefusesEgressSecretsTheRequesterCannotRead (hole 4): kubox-egress reads the
// Secrets of egress credentials with its own rights and sends them where the sandbox asks, so
// a tenant who may get only Secret readable cannot name Secret hidden in a claim's, a Sandbox's
// or a template's spec.egress.credentials, can name readable, and is not checked again on an
// update that keeps the credentials an administrator set.
func TestAdmissionRefusesEgressSecretsTheRequesterCannotRead(t *testing.T) {
	ns := env.NewNamespace(t)
	as, user := tenant(t, ns, "egress-user",
		writeRules(extv1beta1.GroupVersion.Group, "sandboxclaims", "sandboxtemplates"),
		writeRules(sandboxv1beta1.GroupVersion.Group, "sandboxes"),
		getRule("", "secrets", "readable"))
	for kind, build := range credentialNamers {
		t.Run(kind, func(t *testing.T) {
			name := strings.ToLower(kind)
			admittedEventually(t, kind+" naming Secret readable", func() error {
				return as.Create(t.Context(), build(name+"-readable", ns, "readable"), client.DryRunAll)
			})
			wantRefused(t, kind+" naming Secret hidden", func() error {
				return as.Create(t.Context(), build(name+"-hidden", ns, "readable", "hidden"), client.DryRunAll)
			}, kind+" "+name+"-hidden: spec.egress.credentials[1].secretRef: "+user+
				" may not get Secret hidden in namespace "+ns, "get on secrets")

			kept := build(name+"-kept", ns, "hidden")
			env.Create(t, kept) // the administrator may read every Secret
			if err := touch(t, as, kept); err != nil {
				t.Errorf("%s naming Secret hidden, set by the administrator, updated by %s without changing it: %v; want it accepted", kind, user, err)
			}
			wantRefused(t, kind+" given a credential from Secret also-hidden", func() error {
				return replaceSpec(t, as, build(name+"-kept", ns, "hidden", "also-hidden"))
			}, "spec.egress.credentials[1].secretRef", "may not get Secret also-hidden")
		})
	}
}

// TestAdmissionRefusesRestoreAnnotationsInBlueprints (hole 1): kubox.dev/restore-* annotations
// tell the node's runtime (root) what to restore a Pod from; no Sandbox, template or claim may
// carry them into a Pod, whoever writes it.
func TestAdmissionRefusesRestoreAnnotationsInBlueprints(t *testing.T) {
	ns := env.NewNamespace(t)
	as, _ := tenant(t, ns, "blueprint-user",
		writeRules(extv1beta1.GroupVersion.Group, "sandboxclaims", "sandboxtemplates"),
		writeRules(sandboxv1beta1.GroupVersion.Group, "sandboxes"))
	const image = "/var/lib/kubox/snapshots/other-namespace/s1/image"
	cases := map[string]struct {
		obj   client.Object
		field string
	}{
		"Sandbox": {obj: testutil.MakeSandbox("sb", ns).PodAnnotation(contract.RestoreImageAnnotation, image).Obj(),
			field: "spec.podTemplate.metadata.annotations"},
		"SandboxTemplate": {obj: testutil.MakeTemplate("tpl", ns).PodAnnotation("kubox.dev/restore-manifest", "x").Obj(),
			field: "spec.podTemplate.metadata.annotations"},
		"SandboxClaim": {obj: testutil.MakeClaim("claim", ns).Template("python").Obj(),
			field: "spec.additionalPodMetadata.annotations"},
	}
	claim := cases["SandboxClaim"].obj.(*extv1beta1.SandboxClaim)
	claim.Spec.AdditionalPodMetadata.Annotations = map[string]string{contract.RestoreImageAnnotation: image}
	admittedEventually(t, "a plain Sandbox", func() error {
		return as.Create(t.Context(), testutil.MakeSandbox("plain", ns).PodAnnotation("sandbox.users.io/note", "x").Obj(), client.DryRunAll)
	})
	for kind, tc := range cases {
		for who, c := range map[string]client.Client{"tenant": as, "administrator": env.Client} {
			wantRefused(t, kind+" with a restore annotation, by the "+who, func() error {
				return c.Create(t.Context(), tc.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			}, kind+" "+tc.obj.GetName()+": "+tc.field, "kubox.dev/restore-", "snapshotRef")
		}
	}
}

// TestAdmissionRefusesRestoreAnnotationsOnPods (hole 1): only kubox-controller (create on
// sandboxes/provenance) may give a Pod a kubox.dev/restore-* annotation; a tenant who may create
// and update Pods can neither create one with it nor add it, and may still update a restored
// Pod in other ways.
func TestAdmissionRefusesRestoreAnnotationsOnPods(t *testing.T) {
	ns := env.NewNamespace(t)
	podRules := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "update", "patch"}}
	as, user := tenant(t, ns, "pod-user", podRules)
	controller, _ := tenant(t, ns, "controller-like", podRules, framework.ProvenanceRule())
	const image = "/var/lib/kubox/snapshots/other-namespace/s1/image"
	restorePod := func(name string) *corev1.Pod {
		return testutil.MakePod(name, ns).Annotation(contract.RestoreImageAnnotation, image).Obj()
	}
	admittedEventually(t, "a plain Pod", func() error {
		return as.Create(t.Context(), testutil.MakePod("plain", ns).Obj(), client.DryRunAll)
	})
	wantRefused(t, "a Pod with kubox.dev/restore-image by "+user, func() error {
		return as.Create(t.Context(), restorePod("forged"), client.DryRunAll)
	}, "Pod forged", contract.RestoreImageAnnotation, "sandboxes/provenance")
	admittedEventually(t, "a Pod with kubox.dev/restore-image by a requester allowed sandboxes/provenance", func() error {
		return controller.Create(t.Context(), restorePod("vouched"), client.DryRunAll)
	})

	plain := testutil.MakePod("later", ns).Obj()
	env.Create(t, plain)
	wantRefused(t, "adding kubox.dev/restore-image to Pod later", func() error {
		return as.Patch(t.Context(), plain, client.RawPatch(types.MergePatchType,
			fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, contract.RestoreImageAnnotation, image)), client.DryRunAll)
	}, "Pod later", "sandboxes/provenance")

	restored := restorePod("restored")
	env.Create(t, restored)
	if err := touch(t, as, restored); err != nil {
		t.Errorf("labelling a restored Pod, keeping its annotation: %v; want it accepted", err)
	}
}

// TestClaimSnapshotNeedsTheTemplatesOptIn (hole 3): a claim may start its sandbox from a snapshot
// of its choosing only when its template's claimPolicy.snapshotRefPolicy is Allowed; otherwise it
// gets no sandbox and Ready=False/SnapshotRefRejected naming the field. Naming the snapshot the
// template itself starts from needs no opt-in.
func TestClaimSnapshotNeedsTheTemplatesOptIn(t *testing.T) {
	ns := startController(t)
	env.Create(t, testutil.MakeTemplate("plain", ns).Unmanaged().Obj())
	env.Create(t, testutil.MakeTemplate("opted", ns).Unmanaged().
		ClaimPolicy(extv1beta1.ClaimPolicy{SnapshotRefPolicy: extv1beta1.SnapshotRefPolicyAllowed}).Obj())
	own := testutil.MakeTemplate("own", ns).Unmanaged().Obj()
	own.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: "base"}
	env.Create(t, own)
	claimOf := func(name, template, snapshot string) *extv1beta1.SandboxClaim {
		c := testutil.MakeClaim(name, ns).Template(template).Obj()
		c.Spec.SnapshotRef = &sandboxv1beta1.SnapshotReference{Name: snapshot}
		return c
	}

	env.Create(t, claimOf("refused", "plain", "someone-elses"))
	got := waitNotReady(t, ns, "refused", extv1beta1.ClaimReasonSnapshotRefRejected)
	if msg := readyCondition(got).Message; !strings.Contains(msg, "someone-elses") || !strings.Contains(msg, "claimPolicy.snapshotRefPolicy") {
		t.Errorf("message %q; want it to name the snapshot and claimPolicy.snapshotRefPolicy", msg)
	}
	noSandboxNamed(t, ns, "refused")

	for _, c := range []*extv1beta1.SandboxClaim{claimOf("allowed", "opted", "mine"), claimOf("templates-own", "own", "base")} {
		env.Create(t, c)
		framework.WaitForObject(t, env, &sandboxv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Name}},
			func(sb *sandboxv1beta1.Sandbox) (bool, string) {
				return sb.Spec.SnapshotRef != nil && sb.Spec.SnapshotRef.Name == c.Spec.SnapshotRef.Name,
					fmt.Sprintf("Sandbox %s snapshotRef %+v; want %s", sb.Name, sb.Spec.SnapshotRef, c.Spec.SnapshotRef.Name)
			})
	}
}
