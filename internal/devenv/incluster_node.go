package devenv

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubox-dev/kubox/api/contract"
)

// NodeNamespace holds config/node's kubox-node DaemonSet (Pod Security "privileged") and its copy
// of the Secret kubox-node-token.
const NodeNamespace = "kubox-node"

// ensureNodeToken creates the Secret kubox-node-token from in.NodeTokenFile in both namespaces
// that mount it: the controller's and kubox-node's.
func ensureNodeToken(ctx context.Context, p *Progress, cs kubernetes.Interface, in Install) error {
	for _, ns := range []string{KuboxNamespace, NodeNamespace} {
		if err := ensureFileSecret(ctx, cs, ns, NodeTokenSecret, "token", in.NodeTokenFile); err != nil {
			return fmt.Errorf("create the Secret %s/%s: %w", ns, NodeTokenSecret, err)
		}
		p.Say("Secret %s/%s from %s", ns, NodeTokenSecret, in.NodeTokenFile)
	}
	return nil
}

// installNodeAPI labels in.SnapshotNode for kubox-node's DaemonSet, as docs/install.md tells a
// cluster's administrator to, and waits until its Pod there is ready.
func installNodeAPI(ctx context.Context, p *Progress, cs kubernetes.Interface, in Install) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{contract.SnapshotNodeLabel: "true"}}})
	if err != nil {
		return err
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, in.SnapshotNode, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node %s %s=true: %w", in.SnapshotNode, contract.SnapshotNodeLabel, err)
	}
	p.Say("node %s labelled %s=true", in.SnapshotNode, contract.SnapshotNodeLabel)
	last := ""
	err = Poll(ctx, 3*time.Minute, func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().DaemonSets(NodeNamespace).Get(ctx, NodeAPI, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if DaemonSetRolledOut(ds) {
			return true, nil
		}
		if now := podStates(ctx, cs, NodeNamespace, NodeAPI); now != last {
			p.Say("%s: %d/%d ready; %s", NodeAPI, ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, now)
			last = now
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("daemonset %s/%s: %w\n%s", NodeNamespace, NodeAPI, err, diagnose(ctx, cs, in, NodeNamespace, NodeAPI, "ds/"+NodeAPI))
	}
	p.Say("daemonset %s/%s rolled out: %s", NodeNamespace, NodeAPI, podStates(ctx, cs, NodeNamespace, NodeAPI))
	return nil
}

// DaemonSetRolledOut reports whether ds runs its current template, ready, on every node it
// selects, and selects one at least.
func DaemonSetRolledOut(ds *appsv1.DaemonSet) bool {
	s := ds.Status
	return s.ObservedGeneration >= ds.Generation && s.DesiredNumberScheduled > 0 &&
		s.UpdatedNumberScheduled == s.DesiredNumberScheduled && s.NumberReady == s.DesiredNumberScheduled
}

// nodeAPIStatus reports config/node's DaemonSet for `kubox dev status`.
func nodeAPIStatus(ctx context.Context, cs kubernetes.Interface) (started, ready bool, detail string) {
	ds, err := cs.AppsV1().DaemonSets(NodeNamespace).Get(ctx, NodeAPI, metav1.GetOptions{})
	if err != nil {
		return false, false, err.Error()
	}
	return true, DaemonSetRolledOut(ds), fmt.Sprintf("daemonset %s/%s: %d/%d ready", NodeNamespace, NodeAPI,
		ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
}

// stopNodeAPI deletes config/node's DaemonSet and waits until its Pods are gone, so that `down`
// finds no kubox-node Pod that a DaemonSet would start again; the next `up` applies it again.
func stopNodeAPI(ctx context.Context, p *Progress, cs kubernetes.Interface) {
	fg := metav1.DeletePropagationForeground
	err := cs.AppsV1().DaemonSets(NodeNamespace).Delete(ctx, NodeAPI, metav1.DeleteOptions{PropagationPolicy: &fg})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		p.Say("could not delete daemonset %s/%s: %v", NodeNamespace, NodeAPI, err)
		return
	}
	err = Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(NodeNamespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		p.Say("the Pods in %s did not stop (%v); deleting them with the others", NodeNamespace, err)
		return
	}
	p.Say("deleted daemonset %s/%s", NodeNamespace, NodeAPI)
}
