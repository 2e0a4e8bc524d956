// Package nodeapi is the controllers' client of kubox-node, the snapshot API on each node
// (docs/checkpoint.md): the Sandbox controller keeps a suspended sandbox's memory through it, the
// SandboxSnapshot controller takes snapshots of running sandboxes.
package nodeapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubox-dev/kubox/api/config/v1alpha1"
	"github.com/kubox-dev/kubox/api/contract"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/internal/node/nodetls"
	nodev1 "github.com/kubox-dev/kubox/proto/kubox/node/v1"
	"github.com/kubox-dev/kubox/proto/kubox/node/v1/nodev1connect"
)

// Client is what the controllers ask of kubox-node on a node.
type Client interface {
	// Checkpoint snapshots a Pod on the node at hostIP, within CheckpointTimeout.
	Checkpoint(ctx context.Context, hostIP string, req *nodev1.CheckpointRequest) (*nodev1.Snapshot, error)
	// DeleteSnapshot removes a snapshot from the node at hostIP.
	DeleteSnapshot(ctx context.Context, hostIP, namespace, snapshot string) error
	// Fetch makes a snapshot available on the node at hostIP for a restore: there already, or
	// copied from kubox-node's snapshot store.
	Fetch(ctx context.Context, hostIP, namespace, snapshot string) (*nodev1.FetchSnapshotResponse, error)
}

// Options say how to reach kubox-node (controllers.sandbox.memory).
type Options struct {
	// TokenFile holds the node token, read at each call.
	TokenFile string
	// Port is dialled at the node's address; URL, when set, replaces both.
	Port int32
	URL  string
}

// New returns the Client of kubox-node's Connect API, or NotConfigured() when o has no token
// file.
func New(o Options) Client {
	if o.TokenFile == "" {
		return NotConfigured()
	}
	return &clients{Options: o}
}

// FromConfig is the Client the controller configuration's controllers.sandbox.memory describes,
// NotConfigured() when it has no token file.
func FromConfig(m configv1alpha1.MemorySettings) Client {
	return New(Options{TokenFile: m.TokenFile, Port: ptr.Deref(m.NodeAPIPort, configv1alpha1.DefaultNodeAPIPort), URL: m.NodeAPIURL})
}

// ErrNotConfigured is the error of every call of the NotConfigured Client: the controller has no
// node token, so it cannot reach kubox-node.
var ErrNotConfigured = errors.New("kubox-controller has no controllers.sandbox.memory.tokenFile, so it cannot reach kubox-node")

// NotConfigured is the Client of a controller with no controllers.sandbox.memory.tokenFile: every
// call fails with ErrNotConfigured and reaches no node. Callers handle its errors as any other
// call's; one that must act differently before it calls (take no finalizer for a checkpoint that
// cannot happen) asks Configured.
func NotConfigured() Client { return notConfigured{} }

type notConfigured struct{}

func (notConfigured) Checkpoint(context.Context, string, *nodev1.CheckpointRequest) (*nodev1.Snapshot, error) {
	return nil, ErrNotConfigured
}

func (notConfigured) DeleteSnapshot(context.Context, string, string, string) error {
	return ErrNotConfigured
}

func (notConfigured) Fetch(context.Context, string, string, string) (*nodev1.FetchSnapshotResponse, error) {
	return nil, ErrNotConfigured
}

// Configured returns ErrNotConfigured when c is the NotConfigured Client, nil otherwise: for a
// caller whose steps before a call differ when the call cannot succeed (no finalizer before a
// checkpoint, no nodes read to place a restore). The Sandbox reconciler asks it in one place
// (its nodeAPI), an input of its planners.
func Configured(c Client) error {
	if _, off := c.(notConfigured); off {
		return ErrNotConfigured
	}
	return nil
}

// ErrNotInstalled is what a call returns while the node token file is missing: a cluster
// installed from config/default mounts the Secret kubox-node-token when it exists, which
// installing kubox-node creates.
var ErrNotInstalled = errors.New("kubox-node is not installed: install config/node and create the Secret kubox-node-token in kubox-node and in the controller's namespace (docs/install.md)")

// clients is the Client of Options: one HTTP transport per token value, whose connections are
// kept between calls.
type clients struct {
	Options
	mu  sync.Mutex
	sum [sha256.Size]byte
	rt  *http.Transport
}

// CheckpointTimeout bounds one checkpoint: a sandbox holding GiBs takes seconds.
const CheckpointTimeout = 2 * time.Minute

// client is the API of kubox-node at hostIP, over TLS to the key of the node token (package
// nodetls): the token crosses only to a server that holds it already, never in clear.
func (n *clients) client(hostIP string) (nodev1connect.SnapshotServiceClient, error) {
	b, err := os.ReadFile(n.TokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: the node token %s does not exist", ErrNotInstalled, n.TokenFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the node token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	url := n.URL
	switch {
	case url != "" && !strings.HasPrefix(url, "https://"):
		return nil, fmt.Errorf("controllers.sandbox.memory.nodeAPIURL %q: kubox-node serves its API over HTTPS only, "+
			"so that the node token never crosses the network in clear; use https://", url)
	case url == "" && hostIP == "":
		return nil, errors.New("the Pod has no status.hostIP yet, so its node's kubox-node cannot be reached")
	case url == "":
		url = "https://" + net.JoinHostPort(hostIP, strconv.Itoa(int(n.Port)))
	}
	rt, err := n.transport([]byte(tok))
	if err != nil {
		return nil, fmt.Errorf("the node token in %s: %w", n.TokenFile, err)
	}
	return nodev1connect.NewSnapshotServiceClient(&http.Client{Transport: &contract.BearerTransport{Token: tok, Base: rt}}, url), nil
}

// HTTPClient is an http.Client of kubox-node's API with the node token tok, for tools and tests
// that call it themselves: over TLS to kubox-node with that token only (nodetls.ClientConfig),
// with the token on every request.
func HTTPClient(tok string) (*http.Client, error) {
	cfg, err := nodetls.ClientConfig([]byte(tok))
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &contract.BearerTransport{Token: tok, Base: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}}, nil
}

// transport is the HTTP transport that trusts only kubox-node with the token tok.
func (n *clients) transport(tok []byte) (*http.Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sum := sha256.Sum256(tok); n.rt == nil || sum != n.sum {
		cfg, err := nodetls.ClientConfig(tok)
		if err != nil {
			return nil, err
		}
		if n.rt != nil {
			n.rt.CloseIdleConnections()
		}
		n.sum, n.rt = sum, &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, Proxy: nil}
	}
	return n.rt, nil
}

func (n *clients) Checkpoint(ctx context.Context, hostIP string, req *nodev1.CheckpointRequest) (*nodev1.Snapshot, error) {
	c, err := n.client(hostIP)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, CheckpointTimeout)
	defer cancel()
	res, err := c.Checkpoint(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetSnapshot(), nil
}

func (n *clients) DeleteSnapshot(ctx context.Context, hostIP, namespace, snapshot string) error {
	c, err := n.client(hostIP)
	if err != nil {
		return err
	}
	_, err = c.DeleteSnapshot(ctx, connect.NewRequest(&nodev1.DeleteSnapshotRequest{Namespace: namespace, Snapshot: snapshot}))
	return err
}

// FetchTimeout bounds a Fetch: a copy from the store of a snapshot of several GiB.
const FetchTimeout = 5 * time.Minute

// Fetch implements Client.
func (n *clients) Fetch(ctx context.Context, hostIP, namespace, snapshot string) (*nodev1.FetchSnapshotResponse, error) {
	c, err := n.client(hostIP)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	res, err := c.FetchSnapshot(ctx, connect.NewRequest(&nodev1.FetchSnapshotRequest{Namespace: namespace, Snapshot: snapshot}))
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// Status is the API's record of s, taken on node.
func Status(node string, s *nodev1.Snapshot) *sandboxv1beta1.MemoryStatus {
	return &sandboxv1beta1.MemoryStatus{
		Snapshot: s.GetName(), NodeName: node, Image: s.GetImage(),
		SizeBytes: s.GetSizeBytes(), SHA256: s.GetSha256(), Stored: s.GetStored(),
		Duration: &metav1.Duration{Duration: s.GetDuration().AsDuration()},
		TakenAt:  &metav1.Time{Time: s.GetCreateTime().AsTime()},
	}
}

// NodeIP returns the InternalIP of node, where kubox-node listens; found is false when the node
// is gone (and the snapshots it held with it).
func NodeIP(ctx context.Context, r client.Reader, node string) (ip string, found bool, err error) {
	n := &corev1.Node{}
	switch err := r.Get(ctx, client.ObjectKey{Name: node}, n); {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("reading node %s: %w", node, err)
	}
	return InternalIP(n), true, nil
}

// InternalIP is the InternalIP of n, where kubox-node listens; "" when it has none.
func InternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// ErrNoSnapshotNode is the error of a deletion from the snapshot store when no node can be asked:
// none is Ready and labelled contract.SnapshotNodeLabel, or none of their kubox-nodes answered.
var ErrNoSnapshotNode = errors.New("no kubox-node could delete it from the snapshot store")

// SnapshotNodes are the Ready, schedulable nodes labelled contract.SnapshotNodeLabel with an
// InternalIP, by name: those whose kubox-node mounts the snapshot store.
func SnapshotNodes(ctx context.Context, r client.Reader) ([]corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes, client.MatchingLabels{contract.SnapshotNodeLabel: "true"}); err != nil {
		return nil, fmt.Errorf("listing the nodes labelled %s=true: %w", contract.SnapshotNodeLabel, err)
	}
	out := slices.DeleteFunc(nodes.Items, func(n corev1.Node) bool {
		return n.Spec.Unschedulable || InternalIP(&n) == "" || !NodeReady(&n)
	})
	slices.SortFunc(out, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// NodeReady reports whether the Node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DeleteEverywhere deletes the snapshot s of namespace ns from the node that took it and from
// kubox-node's snapshot store: through kubox-node on s.NodeName while that Node exists (it removes
// its copy and the store's); once the Node is gone, when the store holds the snapshot (s.Stored),
// through the first kubox-node of SnapshotNodes that answers, since each mounts the store. Every
// node that fetched a copy removes it once the store no longer holds it (kubox-node's sweep), so
// no copy outlives the deletion, whichever node is gone. A snapshot of a gone node that the store
// does not hold went with the node: nothing to delete. ErrNoSnapshotNode wraps the error when no
// node could be asked.
func DeleteEverywhere(ctx context.Context, r client.Reader, c Client, ns string, s *sandboxv1beta1.MemoryStatus) error {
	ip, found, err := NodeIP(ctx, r, s.NodeName)
	switch {
	case err != nil:
		return err
	case found:
		return c.DeleteSnapshot(ctx, ip, ns, s.Snapshot)
	case !s.Stored:
		return nil
	}
	if err := Configured(c); err != nil {
		return fmt.Errorf("node %s is gone: %w: %w", s.NodeName, ErrNoSnapshotNode, err)
	}
	nodes, err := SnapshotNodes(ctx, r)
	if err != nil {
		return err
	}
	var why []string
	for _, n := range nodes {
		err := c.DeleteSnapshot(ctx, InternalIP(&n), ns, s.Snapshot)
		if err == nil {
			return nil
		}
		why = append(why, fmt.Sprintf("node %s: %v", n.Name, err))
	}
	if len(nodes) == 0 {
		why = append(why, fmt.Sprintf("no node is Ready and labelled %s=true", contract.SnapshotNodeLabel))
	}
	return fmt.Errorf("node %s, which took the snapshot, is gone, and the snapshot store may still hold it: %w (%s)",
		s.NodeName, ErrNoSnapshotNode, strings.Join(why, "; "))
}
