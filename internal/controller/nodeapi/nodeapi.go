// Package nodeapi is the controllers' client of kubox-node, the snapshot API on each node
// (docs/checkpoint.md): the Sandbox controller keeps a suspended sandbox's memory through it, the
// SandboxSnapshot controller takes snapshots of running sandboxes.
package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
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

// New returns the Client of kubox-node's Connect API, or nil when o has no token file.
func New(o Options) Client {
	if o.TokenFile == "" {
		return nil
	}
	return clients(o)
}

// FromConfig is the Client the controller configuration's controllers.sandbox.memory describes,
// or nil when it has no token file.
func FromConfig(m configv1alpha1.MemorySettings) Client {
	return New(Options{TokenFile: m.TokenFile, Port: ptr.Deref(m.NodeAPIPort, configv1alpha1.DefaultNodeAPIPort), URL: m.NodeAPIURL})
}

// ErrNotConfigured is the error of a controller asked to reach kubox-node without a Client.
var ErrNotConfigured = errors.New("kubox-controller has no controllers.sandbox.memory.tokenFile, so it cannot reach kubox-node")

// ErrNotInstalled is what a call returns while the node token file is missing: a cluster
// installed from config/default mounts the Secret kubox-node-token when it exists, which
// installing kubox-node creates.
var ErrNotInstalled = errors.New("kubox-node is not installed: install config/node and create the Secret kubox-node-token in kubox-node and in the controller's namespace (docs/install.md)")

type clients Options

// CheckpointTimeout bounds one checkpoint: a sandbox holding GiBs takes seconds.
const CheckpointTimeout = 2 * time.Minute

func (n clients) client(hostIP string) (nodev1connect.SnapshotServiceClient, error) {
	b, err := os.ReadFile(n.TokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: the node token %s does not exist", ErrNotInstalled, n.TokenFile)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the node token: %w", err)
	}
	url := n.URL
	if url == "" {
		if hostIP == "" {
			return nil, errors.New("the Pod has no status.hostIP yet, so its node's kubox-node cannot be reached")
		}
		url = "http://" + net.JoinHostPort(hostIP, strconv.Itoa(int(n.Port)))
	}
	return nodev1connect.NewSnapshotServiceClient(contract.BearerClient(strings.TrimSpace(string(b))), url), nil
}

func (n clients) Checkpoint(ctx context.Context, hostIP string, req *nodev1.CheckpointRequest) (*nodev1.Snapshot, error) {
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

func (n clients) DeleteSnapshot(ctx context.Context, hostIP, namespace, snapshot string) error {
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
func (n clients) Fetch(ctx context.Context, hostIP, namespace, snapshot string) (*nodev1.FetchSnapshotResponse, error) {
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
