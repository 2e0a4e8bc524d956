//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/devenv"
)

// The install tests exercise kubox installed the way docs/install.md says, from config/ and the
// images `make images` builds: they need `kubox dev up --in-cluster` and run in file order
// (install, upgrade, uninstall; the uninstall test installs kubox again when it ends).

// requireInCluster fails the test (never skips) unless kubox runs as Deployments.
func requireInCluster(t *testing.T) {
	t.Helper()
	if !inCluster {
		t.Fatal("this test needs kubox installed in the cluster (`kubox dev up`, the default): run it without " +
			"KUBOX_E2E_IN_CLUSTER=0, which brings the environment up with host processes instead")
	}
	requireController(t)
}

// kubectlOK runs kubectl against the environment and returns its output, failing the test when
// it fails.
func kubectlOK(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kuboxPods returns the Pods of the Deployment name in kubox-system.
func kuboxPods(t testing.TB, name string) []corev1.Pod {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(devenv.KuboxNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// hostProcessUIDs returns the real UID and the effective capabilities of every process on this
// host whose command line starts with argv0: a container's processes are host processes too.
func hostProcessUIDs(t testing.TB, argv0 string) map[int]string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	found := map[int]string{}
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmdline, []byte(argv0+"\x00")) {
			continue
		}
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue
		}
		var pid int
		_, _ = fmt.Sscanf(filepath.Base(d), "%d", &pid)
		var uid, capEff string
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				uid = f[1]
			} else if len(f) > 1 && f[0] == "CapEff:" {
				capEff = f[1]
			}
		}
		found[pid] = "uid " + uid + " capabilities " + capEff
	}
	return found
}

// TestInClusterInstall: config/dev installed kubox-controller and kubox-router as Pods that run
// as their ServiceAccounts, as the non-root user of their images (no capabilities, read-only
// root), with no kubox host process; a claim, a command and a release go through the in-cluster
// router, which authenticates and authorizes with its ServiceAccount's RBAC.
func TestInClusterInstall(t *testing.T) {
	requireInCluster(t)
	for _, name := range []string{devenv.Controller, devenv.Router} {
		pods := kuboxPods(t, name)
		if len(pods) != 1 {
			t.Fatalf("%d Pods of %s, want the one replica config/dev asks for", len(pods), name)
		}
		pod := pods[0]
		c := pod.Spec.Containers[0]
		sc, psc := c.SecurityContext, pod.Spec.SecurityContext
		switch {
		case pod.Spec.ServiceAccountName != name:
			t.Errorf("Pod %s runs as ServiceAccount %q, want %s", pod.Name, pod.Spec.ServiceAccountName, name)
		case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser != nil:
			t.Errorf("Pod %s: securityContext %+v; want runAsNonRoot and the image's own user", pod.Name, psc)
		case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
			t.Errorf("Pod %s: container securityContext %+v; want a read-only root and no privilege escalation", pod.Name, sc)
		case !podReady(&pod) || len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].RestartCount != 0:
			t.Errorf("Pod %s is %s; want ready, never restarted", pod.Name, devenv.PodState(&pod))
		}
		if c.Image != "kubox.local/"+name+":dev" {
			t.Errorf("Pod %s runs %s, want the image kubox dev up built", pod.Name, c.Image)
		}
		procs := hostProcessUIDs(t, "/"+name)
		if len(procs) != 1 {
			t.Errorf("%d processes run /%s, want the one in Pod %s: %v", len(procs), name, pod.Name, procs)
		}
		for pid, got := range procs {
			if got != fmt.Sprintf("uid %d capabilities 0000000000000000", devenv.NonRootID) {
				t.Errorf("/%s (pid %d) runs with %s; want uid %d and no capabilities", name, pid, got, devenv.NonRootID)
			}
		}
		if _, err := os.Stat(filepath.Join(stateDir, "pids", name+".pid")); err == nil {
			t.Errorf("%s has a pidfile: kubox dev up --in-cluster started it as a host process too", name)
		}
	}

	ns := namespace(t)
	pythonPool(t, ns, 1)
	var stdout, stderr bytes.Buffer
	run := kuboxCmd(ns, "run", "--pool", "python", "--", "python3", "-c", "print(6*7)")
	run.Stdout, run.Stderr = &stdout, &stderr
	if code := exitCode(t, run); code != 0 || stdout.String() != "42\n" {
		t.Fatalf("kubox run through the in-cluster router = exit %d, stdout %q (stderr %q); want 0 and 42", code, stdout.String(), stderr.String())
	}
	createSandbox(t, ns, newSandbox("installed", "gvisor", withPython, withAgent))
	waitSandboxReady(t, ns, "installed")
	tok := serviceAccountWithConnect(t, ns, "installer", "installed")
	if res, err := runThroughRouter(ns, "installed", tok, "python3", "-c", "print(6*7)"); err != nil || string(res.GetStdout()) != "42\n" {
		t.Fatalf("a ServiceAccount allowed on sandbox installed runs python3 through the in-cluster router: %v", err)
	}
	if log := kubectlOK(t, "-n", devenv.KuboxNamespace, "logs", "deploy/"+devenv.Router); !strings.Contains(log, `"namespace":"`+ns+`"`) {
		t.Errorf("the in-cluster router's access log has no request for namespace %s; did another router answer?\n%s", ns, log)
	}
}

// TestInClusterNodeAPI: config/dev runs kubox-node as config/node's DaemonSet on the labelled
// node, from the image kubox dev up built, with no host process of its own: the memory, snapshot
// and fork tests of this suite reach kubox-node through it.
func TestInClusterNodeAPI(t *testing.T) {
	requireInCluster(t)
	node, err := clientset.CoreV1().Nodes().Get(context.Background(), devenv.DefaultConfig().NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[contract.SnapshotNodeLabel] != "true" {
		t.Errorf("node %s labels %v; want %s=true, which kubox-node's DaemonSet selects", node.Name, node.Labels, contract.SnapshotNodeLabel)
	}
	pods, err := clientset.CoreV1().Pods(devenv.NodeNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + devenv.NodeAPI})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d Pods of the DaemonSet %s/%s, want one on the one node", len(pods.Items), devenv.NodeNamespace, devenv.NodeAPI)
	}
	pod := pods.Items[0]
	if c := pod.Spec.Containers[0]; c.Image != devenv.NodeImage || !podReady(&pod) || pod.Spec.NodeName != node.Name {
		t.Errorf("Pod %s runs %s on %s and is %s; want %s, ready, on %s", pod.Name, c.Image, pod.Spec.NodeName,
			devenv.PodState(&pod), devenv.NodeImage, node.Name)
	}
	procs := hostProcessUIDs(t, "/"+devenv.NodeAPI)
	if len(procs) != 1 {
		t.Errorf("%d processes run /%s, want the one in Pod %s: %v", len(procs), devenv.NodeAPI, pod.Name, procs)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "pids", devenv.NodeAPI+".pid")); err == nil {
		t.Errorf("%s has a pidfile: kubox dev up --in-cluster started it as a host process too", devenv.NodeAPI)
	}
}

// TestInClusterUpgrade rolls the controller to another image (same code, another version linked
// in) as an upgrade does: the Sandboxes, Pods and claims made before keep running and answering
// through the router, and the new controller serves a new claim and refills the pool.
func TestInClusterUpgrade(t *testing.T) {
	requireInCluster(t)
	ns := namespace(t)
	pythonPool(t, ns, 2)
	if out, err := kuboxCmd(ns, "claim", "--pool", "python", "--name", "before").CombinedOutput(); err != nil {
		t.Fatalf("kubox claim: %v\n%s", err, out)
	}
	createSandbox(t, ns, newSandbox("standalone", "gvisor", withPython, withAgent))
	waitSandboxReady(t, ns, "standalone")
	tok := serviceAccountWithConnect(t, ns, "upgrader", "standalone")
	podsBefore := podUIDs(t, ns)

	const version, tag = "v0.0.0-e2e-upgrade", "kubox.local/kubox-controller:dev-upgrade"
	tarball, err := devenv.BuildComponentImage(repoDir, devenv.DefaultConfig().ImagesDir,
		devenv.ComponentImage{Name: devenv.Controller, Tag: tag, Version: version})
	if err != nil {
		t.Fatal(err)
	}
	l := devenv.NewLayout(stateDir)
	if out, err := exec.Command(filepath.Join(l.Bin, "ctr"), "-a", l.ContainerdSocket, "-n", "k8s.io",
		"images", "import", tarball).CombinedOutput(); err != nil {
		t.Fatalf("ctr images import %s: %v\n%s", tarball, err, out)
	}
	setControllerImage(t, tag)
	t.Cleanup(func() { setControllerImage(t, devenv.ControllerImage) })
	if log := kubectlOK(t, "-n", devenv.KuboxNamespace, "logs", "deploy/"+devenv.Controller); !strings.Contains(log, version) {
		t.Fatalf("the controller after the roll-out does not report version %s:\n%s", version, log)
	}

	podsAfter := podUIDs(t, ns)
	for name, uid := range podsBefore {
		if podsAfter[name] != uid {
			t.Errorf("Pod %s was replaced or deleted by the upgrade", name)
		}
	}
	if out, err := kuboxCmd(ns, "exec", "--claim", "before", "--", "python3", "-c", "print(6*7)").CombinedOutput(); err != nil || string(out) != "42\n" {
		t.Errorf("kubox exec in the claim made before the upgrade: %v, output %q; want 42", err, out)
	}
	if res, err := runThroughRouter(ns, "standalone", tok, "python3", "-c", "print(6*7)"); err != nil || string(res.GetStdout()) != "42\n" {
		t.Errorf("the Sandbox made before the upgrade, through the router: %v; want 42", err)
	}
	var stdout bytes.Buffer
	run := kuboxCmd(ns, "run", "--pool", "python", "--", "python3", "-c", "print(6*7)")
	run.Stdout = &stdout
	if code := exitCode(t, run); code != 0 || stdout.String() != "42\n" {
		t.Errorf("a new claim after the upgrade (kubox run) = exit %d, stdout %q; want 0 and 42", code, stdout.String())
	}
	waitPoolReady(t, ns, "python", 2)
}

// setControllerImage rolls the controller Deployment to image and waits for the roll-out.
func setControllerImage(t testing.TB, image string) {
	t.Helper()
	kubectlOK(t, "-n", devenv.KuboxNamespace, "set", "image", "deploy/"+devenv.Controller, "manager="+image)
	kubectlOK(t, "-n", devenv.KuboxNamespace, "rollout", "status", "deploy/"+devenv.Controller, "--timeout=3m")
}

// podUIDs maps the names of ns's Pods to their UIDs.
func podUIDs(t testing.TB, ns string) map[string]string {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range pods.Items {
		uids[p.Name] = string(p.UID)
	}
	return uids
}

// TestInClusterUninstall removes kubox as docs/install.md says (the kubox objects first, while
// the controller still runs to remove their finalizers, then `kubectl delete -k`) and finds
// nothing left: no namespace kubox-system, no kubox ClusterRoles or ClusterRoleBindings, no
// CRDs. It installs kubox again when it ends, as docs/install.md says, for the tests after it.
func TestInClusterUninstall(t *testing.T) {
	requireInCluster(t)
	ns := namespace(t)
	createSandbox(t, ns, newSandbox("doomed", "runc"))
	waitSandboxReady(t, ns, "doomed")

	t.Cleanup(func() {
		err := devenv.InstallInCluster(context.Background(), devenv.NewProgress(os.Stderr), clientset, devenv.Install{
			Kubectl: kubectl, Kubeconfig: kubeconfig, Kustomization: filepath.Join(repoDir, devenv.DevOverlay),
			KeyFile: devenv.NewLayout(stateDir).AgentTokenKey, NodeTokenFile: devenv.NewLayout(stateDir).NodeToken})
		if err != nil {
			t.Errorf("installing kubox again after the uninstall: %v", err)
		}
	})
	kubectlOK(t, "delete", "--all-namespaces", "--all", "--wait", "--timeout=2m",
		"sandboxclaims.extensions.agents.x-k8s.io,sandboxwarmpools.extensions.agents.x-k8s.io,"+
			"sandboxtemplates.extensions.agents.x-k8s.io,sandboxes.agents.x-k8s.io")
	kubectlOK(t, "delete", "--ignore-not-found", "--wait", "--timeout=3m", "-k", filepath.Join(repoDir, devenv.DevOverlay))

	waitFor(t, "namespace "+devenv.KuboxNamespace+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := clientset.CoreV1().Namespaces().Get(ctx, devenv.KuboxNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	ctx := context.Background()
	var left []string
	roles, err := clientset.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		if strings.HasPrefix(r.Name, "kubox-") || r.Labels["app.kubernetes.io/part-of"] == "kubox" {
			left = append(left, "ClusterRole "+r.Name)
		}
	}
	bindings, err := clientset.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings.Items {
		if strings.HasPrefix(b.Name, "kubox-") || b.Labels["app.kubernetes.io/part-of"] == "kubox" {
			left = append(left, "ClusterRoleBinding "+b.Name)
		}
	}
	crds := kubectlOK(t, "get", "crd", "-o", "name")
	for _, crd := range strings.Fields(crds) {
		if strings.HasSuffix(crd, "agents.x-k8s.io") {
			left = append(left, crd)
		}
	}
	if len(left) > 0 {
		t.Errorf("the uninstall left behind: %s", strings.Join(left, ", "))
	}
	if procs := hostProcessUIDs(t, "/"+devenv.Controller); len(procs) != 0 {
		t.Errorf("kubox-controller still runs after the uninstall: %v", procs)
	}
}
