package devenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubox-dev/kubox/api/contract"
)

// What config/ installs and config/dev runs on the local node.
const (
	// KuboxNamespace holds the controller, the router and the Secret they share.
	KuboxNamespace = contract.DefaultRouterNamespace
	// AgentTokenKeySecret is the Secret (key "key") holding the key the controller and the router
	// share; `kubectl apply -k` does not create it (kustomize cannot make a random key).
	AgentTokenKeySecret = "kubox-agent-token-key"
	// InClusterKeyFile is where both Deployments mount the Secret's key.
	InClusterKeyFile = "/etc/kubox-agent-token-key/key"
	// NodeTokenSecret is the Secret (key "token") holding the node token kubox-node requires, for
	// the controller (config/dev mounts it); `up` creates it from Layout.NodeToken.
	NodeTokenSecret = "kubox-node-token"
	// DevOverlay is the kustomization `up --in-cluster` applies, relative to the checkout.
	DevOverlay = "config/dev"
)

// kuboxMode runs kubox-controller and kubox-router in the environment. There are two:
// processMode runs them as host processes with the admin kubeconfig, inClusterMode as
// Deployments from config/dev with their ServiceAccounts. kuboxModeOf chooses.
type kuboxMode interface {
	// start builds them, starts them on the ready node and waits until they are ready.
	start(ctx context.Context, e *env) error
	// status reports name (Controller or Router); false leaves it to the pidfile.
	status(ctx context.Context, c Config, l Layout, name string) (ComponentStatus, bool)
	// stop stops them before `down` stops anything else.
	stop(ctx context.Context, p *Progress, l Layout) error
}

// kuboxModeOf is the one place that chooses the mode: `up --in-cluster` asks for the in-cluster
// mode (c.InCluster) and records it in the state (Layout.InClusterMarker), which `status`,
// `down` and a later `up` read.
func kuboxModeOf(c Config, l Layout) kuboxMode {
	if c.InCluster || fileExists(l.InClusterMarker()) {
		return inClusterMode{}
	}
	return processMode{}
}

// processMode runs kubox-node, kubox-controller and kubox-router on the host (env.nodeAPI,
// env.kubox).
type processMode struct{}

func (processMode) start(ctx context.Context, e *env) error {
	if err := e.nodeAPI(ctx); err != nil {
		return err
	}
	return e.kubox(ctx)
}

func (processMode) status(context.Context, Config, Layout, string) (ComponentStatus, bool) {
	return ComponentStatus{}, false
}

func (processMode) stop(context.Context, *Progress, Layout) error { return nil }

// inClusterMode installs config/dev: the images built from the checkout, the key Secret from
// the same key file the process mode uses, then `kubectl apply -k`.
type inClusterMode struct{}

func (inClusterMode) start(ctx context.Context, e *env) error {
	tars, err := BuildComponentImages(e.p, e.c.RepoDir, e.c.ImagesDir, filepath.Dir(e.t.Runsc))
	if err != nil {
		return err
	}
	start := time.Now()
	for _, name := range []string{Controller, Router, NodeAPI} {
		if _, err := e.ctr("images", "import", tars[name]); err != nil {
			return fmt.Errorf("import %s into containerd: %w", tars[name], err)
		}
	}
	e.p.Say("images %s, %s and %s imported in %s", ControllerImage, RouterImage, NodeImage, time.Since(start).Round(100*time.Millisecond))
	return InstallInCluster(ctx, e.p, e.cs, Install{Kubectl: e.t.Kubectl, Kubeconfig: e.l.Kubeconfig,
		Kustomization: filepath.Join(e.c.RepoDir, DevOverlay), KeyFile: e.l.AgentTokenKey, NodeTokenFile: e.l.NodeToken,
		SnapshotNode: e.c.NodeName})
}

func (inClusterMode) status(ctx context.Context, c Config, l Layout, name string) (ComponentStatus, bool) {
	if name != Controller && name != Router && name != NodeAPI {
		return ComponentStatus{}, false
	}
	s := ComponentStatus{Name: name, Log: fmt.Sprintf("kubectl -n %s logs deploy/%s", KuboxNamespace, name)}
	cs, err := NewClient(l.Kubeconfig)
	if err != nil {
		s.Detail = err.Error()
		return s, true
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if name == NodeAPI {
		s.Log = fmt.Sprintf("kubectl -n %s logs ds/%s", NodeNamespace, name)
		s.Started, s.Ready, s.Detail = nodeAPIStatus(ctx, cs)
		s.Alive = s.Started
		if s.Ready {
			if ok, detail := probeOnce(ctx, nodeAPIReady(c)); !ok {
				s.Ready, s.Detail = false, s.Detail+"; "+detail
			}
		}
		return s, true
	}
	d, err := cs.AppsV1().Deployments(KuboxNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		s.Detail = err.Error()
		return s, true
	}
	s.Started, s.Alive, s.Ready = true, d.Status.AvailableReplicas > 0, RolledOut(d)
	s.Detail = fmt.Sprintf("deployment %s/%s: %d/%d available", KuboxNamespace, name, d.Status.AvailableReplicas, replicas(d))
	if s.Ready {
		probe := map[string]func(context.Context) (bool, error){Controller: controllerReady(c), Router: routerReady(c)}[name]
		if ok, detail := probeOnce(ctx, probe); !ok {
			s.Ready, s.Detail = false, s.Detail+"; "+detail
		}
	}
	return s, true
}

func probeOnce(ctx context.Context, check func(context.Context) (bool, error)) (bool, string) {
	ok, detail := probe(ctx, check)
	if !ok && detail == "" {
		detail = "not ready"
	}
	return ok, detail
}

// stop scales both Deployments to zero and waits until their Pods are gone, while
// kube-controller-manager still runs: `down` then deletes the remaining pods with no controller
// left to recreate a sandbox's Pod.
func (inClusterMode) stop(ctx context.Context, p *Progress, l Layout) error {
	if !aliveComponent(l, APIServer) || !aliveComponent(l, ControllerManager) || !aliveComponent(l, Kubelet) {
		return nil
	}
	cs, err := NewClient(l.Kubeconfig)
	if err != nil {
		return nil
	}
	for _, name := range []string{Router, Controller} {
		_, err := cs.AppsV1().Deployments(KuboxNamespace).UpdateScale(ctx, name, &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: KuboxNamespace}, Spec: autoscalingv1.ScaleSpec{Replicas: 0}},
			metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			p.Say("could not scale %s/%s to 0: %v", KuboxNamespace, name, err)
		}
	}
	err = Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(KuboxNamespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		p.Say("the Pods in %s did not stop (%v); deleting them with the others", KuboxNamespace, err)
		return nil
	}
	p.Say("scaled %s and %s to 0 in %s", Controller, Router, KuboxNamespace)
	stopNodeAPI(ctx, p, cs)
	return nil
}

// Install is what InstallInCluster applies and with what.
type Install struct {
	// Kubectl and Kubeconfig run kubectl against the cluster.
	Kubectl, Kubeconfig string
	// Kustomization is the folder `kubectl apply -k` gets (config/dev).
	Kustomization string
	// KeyFile holds the key the Secret kubox-agent-token-key gets.
	KeyFile string
	// NodeTokenFile, when set, holds the token the Secrets kubox-node-token get (in kubox-system
	// for the controller, in kubox-node for kubox-node).
	NodeTokenFile string
	// SnapshotNode, when set, is the node labelled for kubox-node's DaemonSet (SnapshotNodeLabel),
	// which InstallInCluster then waits for.
	SnapshotNode string
}

// InstallInCluster installs kubox the way docs/install.md says: the namespace and the key Secret
// first (so the Pods find it at once), then `kubectl apply --server-side -k` (server-side: the
// CRDs are too large for the last-applied annotation), then it waits for both Deployments to roll
// out, printing their progress.
func InstallInCluster(ctx context.Context, p *Progress, cs kubernetes.Interface, in Install) error {
	if err := ensureFileSecret(ctx, cs, KuboxNamespace, AgentTokenKeySecret, "key", in.KeyFile); err != nil {
		return fmt.Errorf("create the Secret %s/%s: %w", KuboxNamespace, AgentTokenKeySecret, err)
	}
	p.Say("Secret %s/%s from %s", KuboxNamespace, AgentTokenKeySecret, in.KeyFile)
	if in.NodeTokenFile != "" {
		if err := ensureNodeToken(ctx, p, cs, in); err != nil {
			return err
		}
	}
	if err := kubectlRun(in.Kubectl, in.Kubeconfig, "apply", "--server-side", "--force-conflicts", "-k", in.Kustomization); err != nil {
		return err
	}
	p.Say("applied %s", in.Kustomization)
	for _, name := range []string{Controller, Router} {
		if err := WaitRolledOut(ctx, p, cs, name, 3*time.Minute); err != nil {
			return fmt.Errorf("%w\n%s", err, diagnose(ctx, cs, in, KuboxNamespace, name, "deploy/"+name))
		}
	}
	if in.SnapshotNode != "" {
		return installNodeAPI(ctx, p, cs, in)
	}
	return nil
}

// ensureFileSecret creates the namespace ns when missing and its Secret name whose dataKey holds
// file's content, or updates it when it holds another.
func ensureFileSecret(ctx context.Context, cs kubernetes.Interface, ns, name, dataKey, file string) error {
	key, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{"app.kubernetes.io/part-of": "kubox"}}, Data: map[string][]byte{dataKey: key}}
	secrets := cs.CoreV1().Secrets(ns)
	old, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case string(old.Data[dataKey]) == string(key):
		return nil
	}
	old.Data = secret.Data
	_, err = secrets.Update(ctx, old, metav1.UpdateOptions{})
	return err
}

// RolledOut reports whether every replica of d runs its current template and is available.
func RolledOut(d *appsv1.Deployment) bool {
	n := replicas(d)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == n && s.Replicas == n && s.AvailableReplicas == n
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// WaitRolledOut waits until the Deployment name in kubox-system has rolled out, printing each
// change of its Pods' states.
func WaitRolledOut(ctx context.Context, p *Progress, cs kubernetes.Interface, name string, timeout time.Duration) error {
	last := ""
	err := Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(KuboxNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if RolledOut(d) {
			return true, nil
		}
		if now := podStates(ctx, cs, KuboxNamespace, name); now != last {
			p.Say("%s: %d/%d available; %s", name, d.Status.AvailableReplicas, replicas(d), now)
			last = now
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", KuboxNamespace, name, err)
	}
	p.Say("deployment %s/%s rolled out: %s", KuboxNamespace, name, podStates(ctx, cs, KuboxNamespace, name))
	return nil
}

// podStates summarises the Pods in ns labelled app.kubernetes.io/name=name: "pod-abc Running
// ready, pod-def Pending (ContainerCreating)".
func podStates(ctx context.Context, cs kubernetes.Interface, ns, name string) string {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil {
		return err.Error()
	}
	if len(pods.Items) == 0 {
		return "no pods yet"
	}
	var out []string
	for _, pod := range pods.Items {
		out = append(out, pod.Name+" "+PodState(&pod))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// PodState is a pod's phase with the reason its containers wait or why they last ended.
func PodState(pod *corev1.Pod) string {
	state := string(pod.Status.Phase)
	for _, c := range pod.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			state += " (" + c.State.Waiting.Reason
			if c.State.Waiting.Message != "" {
				state += ": " + c.State.Waiting.Message
			}
			state += ")"
		case c.Ready:
			state += " ready"
		}
		if c.RestartCount > 0 {
			state += fmt.Sprintf(", %d restarts", c.RestartCount)
		}
	}
	if pod.DeletionTimestamp != nil {
		state += " terminating"
	}
	return state
}

// diagnose says what a workload (workload: "deploy/<name>", "ds/<name>") in ns that did not roll
// out was doing: its Pods, the warnings about them and the last lines of its log.
func diagnose(ctx context.Context, cs kubernetes.Interface, in Install, ns, name, workload string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pods: %s\n", podStates(ctx, cs, ns, name))
	if evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"}); err == nil {
		for _, ev := range evs.Items {
			if strings.HasPrefix(ev.InvolvedObject.Name, name) {
				fmt.Fprintf(&b, "event %s %s: %s\n", ev.InvolvedObject.Name, ev.Reason, ev.Message)
			}
		}
	}
	out, _ := exec.Command(in.Kubectl, "--kubeconfig="+in.Kubeconfig, "-n", ns, "logs", "--tail=20", workload).CombinedOutput()
	fmt.Fprintf(&b, "last lines of its log (kubectl -n %s logs %s):\n%s", ns, workload, out)
	return b.String()
}
