package router

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
)

// E2B's defaults: a sandbox lives 15 s unless the request says otherwise (the SDKs send 300).
const (
	e2bDefaultTimeout = 15 * time.Second
	// e2bClientID fills the deprecated clientID E2B's schemas still require.
	e2bClientID = "kubox"
	// e2bIDBytes random bytes name a sandbox (base32: 16 characters).
	e2bIDBytes = 10
	// e2bMaxBody bounds a control API request's JSON.
	e2bMaxBody = 1 << 20
)

// e2bNewSandbox is the body of POST /sandboxes and /v2/sandboxes (E2B's NewSandbox). The fields
// after EnvVars are E2B features kubox does not serve per sandbox: a request that sets one is
// refused (unsupportedE2BOptions) rather than given a sandbox without what it asked for.
type e2bNewSandbox struct {
	TemplateID string            `json:"templateID"`
	Timeout    *int64            `json:"timeout,omitempty"`
	AutoPause  bool              `json:"autoPause,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	EnvVars    map[string]string `json:"envVars,omitempty"`

	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Network             json.RawMessage   `json:"network,omitempty"`
	VolumeMounts        []json.RawMessage `json:"volumeMounts,omitempty"`
	MCP                 json.RawMessage   `json:"mcp,omitempty"`
	AutoResume          *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume,omitempty"`
	IAM *struct {
		Tokens map[string]json.RawMessage `json:"tokens,omitempty"`
	} `json:"iam,omitempty"`
}

// unsupportedE2BOptions names the first option of req kubox cannot honour, and what to use.
func unsupportedE2BOptions(req *e2bNewSandbox) *httpError {
	switch {
	case req.AutoPause || (req.AutoResume != nil && req.AutoResume.Enabled):
		return errorf(http.StatusBadRequest, "autoPause and autoResume are not supported: a kubox sandbox's timeout deletes it; use an idle policy to suspend sandboxes and wake them on the next request")
	case req.AllowInternetAccess != nil && !*req.AllowInternetAccess:
		return errorf(http.StatusBadRequest, "allow_internet_access=false is not supported per sandbox: a sandbox's egress is its SandboxTemplate's network policy; create from a template without egress")
	case len(req.Network) > 0 && string(req.Network) != "null":
		return errorf(http.StatusBadRequest, "network rules per sandbox are not supported: state egress on the SandboxTemplate (docs/egress.md)")
	case len(req.VolumeMounts) > 0:
		return errorf(http.StatusBadRequest, "E2B volumes are not supported: give the SandboxTemplate volumeClaimTemplates")
	case len(req.MCP) > 0 && string(req.MCP) != "null":
		return errorf(http.StatusBadRequest, "an MCP gateway in the sandbox is not supported: run `kubox mcp` (docs/mcp.md)")
	case req.IAM != nil && len(req.IAM.Tokens) > 0:
		return errorf(http.StatusBadRequest, "IAM tokens are not supported: give the sandbox credentials through the claim's secret files")
	}
	return nil
}

// e2bSandbox is E2B's Sandbox: what create, resume and connect answer.
type e2bSandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken"`
	Domain          string `json:"domain"`
}

// e2bDetail is E2B's SandboxDetail and ListedSandbox (which lacks the token and domain).
type e2bDetail struct {
	TemplateID      string            `json:"templateID"`
	SandboxID       string            `json:"sandboxID"`
	ClientID        string            `json:"clientID"`
	StartedAt       time.Time         `json:"startedAt"`
	EndAt           time.Time         `json:"endAt"`
	EnvdVersion     string            `json:"envdVersion"`
	EnvdAccessToken string            `json:"envdAccessToken,omitempty"`
	Domain          string            `json:"domain,omitempty"`
	CPUCount        int               `json:"cpuCount"`
	MemoryMB        int               `json:"memoryMB"`
	DiskSizeMB      int               `json:"diskSizeMB"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	State           string            `json:"state"`
}

// E2B's sandbox states.
const (
	e2bRunning = "running"
	e2bPaused  = "paused"
)

// e2bTimeout is the body of /timeout, /connect and /resume ({"timeout": seconds}) and of
// /refreshes ({"duration": seconds}).
type e2bTimeout struct {
	Timeout  *int64 `json:"timeout,omitempty"`
	Duration *int64 `json:"duration,omitempty"`
}

// e2bHandler is a control API operation, run as caller.
type e2bHandler func(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError

// newE2BMux routes E2B's control API paths.
func (rt *Router) newE2BMux() *http.ServeMux {
	mux := http.NewServeMux()
	for pattern, h := range map[string]e2bHandler{
		"POST /sandboxes":                      rt.e2bCreate,
		"POST /v2/sandboxes":                   rt.e2bCreate,
		"GET /sandboxes":                       rt.e2bList,
		"GET /v2/sandboxes":                    rt.e2bList,
		"GET /sandboxes/{id}":                  rt.e2bGet,
		"DELETE /sandboxes/{id}":               rt.e2bKill,
		"POST /sandboxes/{id}/timeout":         rt.e2bSetTimeout,
		"POST /sandboxes/{id}/refreshes":       rt.e2bSetTimeout,
		"POST /sandboxes/{id}/pause":           rt.e2bPause,
		"POST /sandboxes/{id}/resume":          rt.e2bResume,
		"POST /sandboxes/{id}/connect":         rt.e2bConnect,
		"POST /v2/sandboxes/{id}/connect":      rt.e2bConnect,
		"POST /sandboxes/{id}/fork":            rt.e2bUnsupported,
		"POST /sandboxes/{id}/snapshots":       rt.e2bUnsupported,
		"GET /snapshots":                       rt.e2bUnsupported,
		"GET /health":                          nil,
		"GET /sandboxes/{id}/logs":             rt.e2bUnsupported,
		"GET /v2/sandboxes/{id}/logs":          rt.e2bUnsupported,
		"GET /sandboxes/{id}/metrics":          rt.e2bUnsupported,
		"GET /sandboxes/metrics":               rt.e2bUnsupported,
		"POST /v2/sandboxes/{id}/snapshots":    rt.e2bUnsupported,
		"POST /sandboxes/{id}/network":         rt.e2bUnsupported,
		"PUT /sandboxes/{id}/network":          rt.e2bUnsupported,
		"POST /v3/templates":                   rt.e2bUnsupported,
		"POST /v2/templates":                   rt.e2bUnsupported,
		"GET /templates":                       rt.e2bUnsupported,
		"GET /templates/{id}":                  rt.e2bUnsupported,
		"POST /templates/{id}":                 rt.e2bUnsupported,
		"DELETE /templates/{id}":               rt.e2bUnsupported,
		"GET /templates/{id}/builds/{buildID}": rt.e2bUnsupported,
	} {
		if h == nil {
			mux.HandleFunc(pattern, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			continue
		}
		mux.HandleFunc(pattern, rt.e2bServe(h))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeE2BError(w, errorf(http.StatusNotFound, "kubox's E2B API has no %s %s", r.Method, clip(r.URL.Path)))
	})
	return mux
}

// serveE2BAPI serves E2B's control API.
func (rt *Router) serveE2BAPI(w http.ResponseWriter, r *http.Request) { rt.e2bMux.ServeHTTP(w, r) }

// e2bServe authenticates the caller, then runs h with the caller's token.
func (rt *Router) e2bServe(h e2bHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !rt.synced.Load() {
			writeE2BError(w, errorf(http.StatusServiceUnavailable, "the router is still loading SandboxClaims from the Kubernetes API; retry shortly"))
			return
		}
		c, herr := rt.authenticateE2B(r.Context(), r)
		rt.recordE2BDecision(herr)
		if herr == nil {
			info := infoFrom(r.Context())
			info.principal, info.namespace, info.name = c.user.Name, c.namespace, r.PathValue("id")
			herr = h(withCaller(r.Context(), c), w, r, c)
		}
		if herr != nil {
			writeE2BError(w, herr)
		}
	}
}

func (rt *Router) e2bUnsupported(_ context.Context, _ http.ResponseWriter, r *http.Request, _ *e2bCaller) *httpError {
	return errorf(http.StatusNotImplemented, "kubox does not serve %s %s of E2B's API: templates are SandboxTemplates and "+
		"SandboxWarmPools, logs and metrics are Kubernetes', snapshots and fork are not served yet (docs/e2b.md)", r.Method, clip(r.URL.Path))
}

// e2bCreate creates a SandboxClaim from the warm pool (else the template) named templateID and
// answers once it is Ready, with a claim token as envd's access token.
func (rt *Router) e2bCreate(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	var req e2bNewSandbox
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	if req.TemplateID == "" {
		return errorf(http.StatusBadRequest, "templateID is required: the name of a SandboxWarmPool or SandboxTemplate in %s", c.namespace)
	}
	if herr := unsupportedE2BOptions(&req); herr != nil {
		return herr
	}
	timeout, herr := e2bSeconds(req.Timeout, e2bDefaultTimeout)
	if herr != nil {
		return herr
	}
	claim := &extv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: newE2BSandboxID()}}
	if herr := rt.e2bSource(ctx, claim, req.TemplateID); herr != nil {
		return herr
	}
	if herr := setE2BMetadata(claim, req.Metadata); herr != nil {
		return herr
	}
	for k, v := range req.EnvVars {
		claim.Spec.Env = append(claim.Spec.Env, extv1beta1.EnvVar{Name: k, Value: v})
	}
	claim.Spec.Lifecycle = e2bLifecycle(rt.now(), timeout)
	// The answer carries an envd access token: refuse before creating anything a caller who may
	// not connect to it would be left with.
	if herr := rt.authorizeMint(ctx, c.principal(), claim.Namespace, claim.Name); herr != nil {
		return herr
	}
	if err := rt.e2bKube.Create(ctx, claim); err != nil {
		return e2bKubeError(err, "creating a SandboxClaim in "+c.namespace)
	}
	ready, herr := rt.waitE2BReady(ctx, claim, 0)
	if herr != nil {
		// E2B's create either answers a sandbox or leaves none behind.
		if err := rt.e2bKube.Delete(context.WithoutCancel(ctx), claim, preconditionUID(claim)); err != nil && !apierrors.IsNotFound(err) {
			rt.log.Warn("Deleting the claim of a failed E2B create failed; its timeout deletes it", "claim", claim.Name, "namespace", claim.Namespace, "error", err)
		}
		return herr
	}
	return rt.writeE2BSandbox(w, r, c, http.StatusCreated, claimTemplate(claim), ready, claim.Spec.Lifecycle.ShutdownTime)
}

// e2bSource points claim at the warm pool templateID, else at the template templateID (cold).
func (rt *Router) e2bSource(ctx context.Context, claim *extv1beta1.SandboxClaim, templateID string) *httpError {
	if len(validation.IsDNS1123Subdomain(templateID)) > 0 {
		return errorf(http.StatusBadRequest, "templateID %q is not a SandboxWarmPool or SandboxTemplate name", clip(templateID))
	}
	key := objectKey(claim.Namespace, templateID)
	err := rt.e2bKube.Get(ctx, key, &extv1beta1.SandboxWarmPool{})
	if err == nil {
		claim.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolReference{Name: templateID}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return e2bKubeError(err, "reading SandboxWarmPool "+templateID)
	}
	if err := rt.e2bKube.Get(ctx, key, &extv1beta1.SandboxTemplate{}); err != nil {
		if apierrors.IsNotFound(err) {
			return errorf(http.StatusNotFound, "template %q not found: %s has no SandboxWarmPool or SandboxTemplate of that name", templateID, claim.Namespace)
		}
		return e2bKubeError(err, "reading SandboxTemplate "+templateID)
	}
	claim.Spec.SandboxTemplateRef = &extv1beta1.SandboxTemplateReference{Name: templateID}
	return nil
}

// setE2BMetadata keeps E2B's metadata on the claim as one JSON annotation (free-text values,
// which labels cannot hold).
func setE2BMetadata(claim *extv1beta1.SandboxClaim, md map[string]string) *httpError {
	if len(md) == 0 {
		return nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return errorf(http.StatusBadRequest, "metadata: %v", err)
	}
	if len(b) > 64<<10 {
		return errorf(http.StatusBadRequest, "metadata has %d bytes of JSON; at most 65536", len(b))
	}
	claim.Annotations = map[string]string{contract.E2BMetadataAnnotation: string(b)}
	return nil
}

func e2bMetadata(claim *extv1beta1.SandboxClaim) map[string]string {
	var md map[string]string
	_ = json.Unmarshal([]byte(claim.Annotations[contract.E2BMetadataAnnotation]), &md)
	return md
}

// e2bLifecycle makes the claim expire, and be deleted with its sandbox, timeout from now: an
// E2B sandbox is killed when its timeout passes.
func e2bLifecycle(now time.Time, timeout time.Duration) *extv1beta1.ClaimLifecycle {
	t := metav1.NewTime(now.Add(timeout).Truncate(time.Second))
	return &extv1beta1.ClaimLifecycle{ShutdownTime: &t, ShutdownPolicy: extv1beta1.ClaimShutdownPolicyDelete}
}

// e2bSeconds reads a timeout in seconds; nil: def.
func e2bSeconds(s *int64, def time.Duration) (time.Duration, *httpError) {
	switch {
	case s == nil:
		return def, nil
	case *s < 0 || *s > int64(365*24*time.Hour/time.Second):
		return 0, errorf(http.StatusBadRequest, "timeout %d is not a number of seconds from 0 to a year", *s)
	}
	return time.Duration(*s) * time.Second, nil
}

func newE2BSandboxID() string {
	b := make([]byte, e2bIDBytes)
	_, _ = rand.Read(b)
	return "e2b-" + lowerBase32(b)
}

func lowerBase32(b []byte) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	out := make([]byte, 0, len(b)*8/5+1)
	var acc, bits uint
	for _, c := range b {
		acc, bits = acc<<8|uint(c), bits+8
		for bits >= 5 {
			bits -= 5
			out = append(out, alphabet[(acc>>bits)&31])
		}
	}
	return string(out)
}

// e2bNextTokenHeader carries the token of a list's next page; the SDKs send it back as nextToken.
const e2bNextTokenHeader = "X-Next-Token"

// e2bList lists the caller's sandboxes: the namespace's claims, with their state, filtered by
// the query's metadata (k=v&...) and state (running, paused).
func (rt *Router) e2bList(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	list := &extv1beta1.SandboxClaimList{}
	if err := rt.e2bKube.List(ctx, list, inNamespace(c.namespace)); err != nil {
		return e2bKubeError(err, "listing SandboxClaims in "+c.namespace)
	}
	filter, herr := parseE2BListFilter(r)
	if herr != nil {
		return herr
	}
	out := []e2bDetail{}
	for i := range list.Items {
		cl := &list.Items[i]
		if cl.DeletionTimestamp != nil {
			continue
		}
		d := rt.e2bDetailOf(ctx, cl)
		if filter.match(d) {
			out = append(out, d)
		}
	}
	page, next := filter.page(out)
	if next != "" {
		w.Header().Set(e2bNextTokenHeader, next)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// e2bGet describes one sandbox, with a new envd access token when the caller may connect to it.
func (rt *Router) e2bGet(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	cl, herr := rt.e2bClaim(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	d := rt.e2bDetailOf(ctx, cl)
	tok, herr := rt.e2bAccessToken(ctx, c, cl.Namespace, cl.Name, claimShutdown(cl))
	switch {
	case herr == nil:
		d.EnvdAccessToken = tok
	case herr.code != http.StatusForbidden:
		return herr
	}
	// A caller who may read the claim but not connect to it gets its details without a token.
	d.Domain = rt.e2bDomain(r)
	writeJSON(w, http.StatusOK, d)
	return nil
}

// e2bKill deletes the claim, and its sandbox with it, and answers once the router's cache no
// longer has the claim: from then on its envd access tokens are refused, as a killed E2B
// sandbox's are.
func (rt *Router) e2bKill(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	cl, herr := rt.e2bClaim(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if err := rt.e2bKube.Delete(ctx, cl, preconditionUID(cl)); err != nil {
		return e2bKubeError(err, "deleting SandboxClaim "+cl.Name)
	}
	if herr := rt.waitE2BGone(ctx, cl); herr != nil {
		return herr
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// e2bSetTimeout sets the claim's expiry to the body's timeout (or refresh duration) from now.
func (rt *Router) e2bSetTimeout(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	var req e2bTimeout
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	s := req.Timeout
	if s == nil {
		s = req.Duration
	}
	if s == nil {
		return errorf(http.StatusBadRequest, "the body needs a timeout in seconds: {\"timeout\": 300}")
	}
	timeout, herr := e2bSeconds(s, 0)
	if herr != nil {
		return herr
	}
	cl, herr := rt.e2bClaim(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if _, herr := rt.patchE2BTimeout(ctx, cl, timeout); herr != nil {
		return herr
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// patchE2BTimeout sets the claim's shutdownTime timeout from now, and returns the lifecycle set.
func (rt *Router) patchE2BTimeout(ctx context.Context, cl *extv1beta1.SandboxClaim, timeout time.Duration) (*extv1beta1.ClaimLifecycle, *httpError) {
	lc := e2bLifecycle(rt.now(), timeout)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": cl.UID},
		"spec": map[string]any{"lifecycle": map[string]any{"shutdownTime": lc.ShutdownTime, "shutdownPolicy": lc.ShutdownPolicy}}})
	if err := rt.e2bKube.Patch(ctx, cl, rawMergePatch(patch)); err != nil {
		return nil, e2bKubeError(err, "setting the timeout of SandboxClaim "+cl.Name)
	}
	return lc, nil
}

// e2bPause suspends the claim's sandbox (its Pod goes; the Sandbox, its volumes and its claim
// stay). A paused sandbox answers 409, as E2B does.
func (rt *Router) e2bPause(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	var req struct {
		Memory *bool `json:"memory,omitempty"`
	}
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	if req.Memory != nil && *req.Memory {
		return errorf(http.StatusBadRequest, "pause with memory (keepMemory) is not supported yet: a paused kubox sandbox keeps its volumes, and its processes restart on resume")
	}
	cl, sb, herr := rt.e2bClaimSandbox(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	if sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
		return errorf(http.StatusConflict, "sandbox %s is already paused", cl.Name)
	}
	gen, herr := rt.setE2BMode(ctx, sb, sandboxv1beta1.SandboxOperatingModeSuspended)
	if herr != nil {
		return herr
	}
	if herr := rt.waitE2BSuspended(ctx, sb, gen); herr != nil {
		return herr
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// waitE2BSuspended waits until the controller has acted on generation gen of sb (its
// Suspended patch) and its Pod is gone: E2B's pause answers once the sandbox is paused, so a
// connect right after it resumes a stopped sandbox, never one still shutting down.
func (rt *Router) waitE2BSuspended(ctx context.Context, sb *sandboxv1beta1.Sandbox, gen int64) *httpError {
	return rt.pollE2B(ctx, func(ctx context.Context) (bool, *httpError) {
		got, _ := rt.lookupSandbox(ctx, sb.Namespace, sb.Name)
		if got == nil || got.UID != sb.UID {
			return false, errorf(http.StatusNotFound, "sandbox %s was deleted while pausing", sb.Name)
		}
		return got.Status.ObservedGeneration >= gen && meta.IsStatusConditionTrue(got.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended), nil
	}, func() *httpError {
		return errorf(http.StatusGatewayTimeout, "sandbox %s was not paused within %s; it goes on pausing", sb.Name, rt.cfg.WakeTimeout)
	})
}

// pollE2B calls check every 50 ms, on the router's cache, until it is done or fails, for at
// most --wake-timeout; then it answers timedOut's error.
func (rt *Router) pollE2B(ctx context.Context, check func(context.Context) (bool, *httpError), timedOut func() *httpError) *httpError {
	ctx, cancel := context.WithTimeout(ctx, rt.cfg.WakeTimeout)
	defer cancel()
	for {
		if done, herr := check(ctx); done || herr != nil {
			return herr
		}
		select {
		case <-ctx.Done():
			return timedOut()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// e2bResume resumes a paused sandbox (409 when it runs), sets its timeout, and answers once it
// is Ready.
func (rt *Router) e2bResume(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	return rt.e2bWake(ctx, w, r, c, false)
}

// e2bConnect is resume that also takes a running sandbox (200) and extends its timeout.
func (rt *Router) e2bConnect(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller) *httpError {
	return rt.e2bWake(ctx, w, r, c, true)
}

func (rt *Router) e2bWake(ctx context.Context, w http.ResponseWriter, r *http.Request, c *e2bCaller, running bool) *httpError {
	var req e2bTimeout
	if herr := decodeE2B(r, &req); herr != nil {
		return herr
	}
	timeout, herr := e2bSeconds(req.Timeout, e2bDefaultTimeout)
	if herr != nil {
		return herr
	}
	cl, sb, herr := rt.e2bClaimSandbox(ctx, c, r.PathValue("id"))
	if herr != nil {
		return herr
	}
	paused := sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended
	if !paused && !running {
		return errorf(http.StatusConflict, "sandbox %s is already running", cl.Name)
	}
	if herr := rt.authorizeMint(ctx, c.principal(), cl.Namespace, cl.Name); herr != nil {
		return herr // before anything changes: the answer carries an envd access token
	}
	lc, herr := rt.patchE2BTimeout(ctx, cl, timeout)
	if herr != nil {
		return herr
	}
	code, gen := http.StatusOK, int64(0)
	if paused {
		code = http.StatusCreated
		if gen, herr = rt.setE2BMode(ctx, sb, sandboxv1beta1.SandboxOperatingModeRunning); herr != nil {
			return herr
		}
	}
	ready, herr := rt.waitE2BReady(ctx, cl, gen)
	if herr != nil {
		return herr
	}
	return rt.writeE2BSandbox(w, r, c, code, claimTemplate(cl), ready, lc.ShutdownTime)
}

// setE2BMode patches the sandbox's operatingMode as the caller, guarded by its UID, and returns
// the generation that patch made.
func (rt *Router) setE2BMode(ctx context.Context, sb *sandboxv1beta1.Sandbox, mode sandboxv1beta1.SandboxOperatingMode) (int64, *httpError) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": sb.UID}, "spec": map[string]any{"operatingMode": mode}})
	patched := sb.DeepCopy()
	if err := rt.e2bKube.Patch(ctx, patched, rawMergePatch(patch)); err != nil {
		return 0, e2bKubeError(err, "setting Sandbox "+sb.Name+" "+string(mode))
	}
	return patched.Generation, nil
}

// e2bClaim reads the claim id as the caller: 404 when it does not exist or is being deleted.
func (rt *Router) e2bClaim(ctx context.Context, c *e2bCaller, id string) (*extv1beta1.SandboxClaim, *httpError) {
	if len(validation.IsDNS1123Label(id)) > 0 {
		return nil, errorf(http.StatusNotFound, "sandbox %q not found", clip(id))
	}
	cl := &extv1beta1.SandboxClaim{}
	if err := rt.e2bKube.Get(ctx, objectKey(c.namespace, id), cl); err != nil {
		return nil, e2bKubeError(err, "reading SandboxClaim "+id)
	}
	if cl.DeletionTimestamp != nil {
		return nil, errorf(http.StatusNotFound, "sandbox %s not found: it is being killed", id)
	}
	return cl, nil
}

// e2bClaimSandbox reads the claim id and its sandbox, both as the caller.
func (rt *Router) e2bClaimSandbox(ctx context.Context, c *e2bCaller, id string) (*extv1beta1.SandboxClaim, *sandboxv1beta1.Sandbox, *httpError) {
	cl, herr := rt.e2bClaim(ctx, c, id)
	if herr != nil {
		return nil, nil, herr
	}
	if cl.Status.Sandbox.Name == "" {
		return nil, nil, errorf(http.StatusConflict, "sandbox %s has no Kubernetes Sandbox yet (or any more); retry shortly", id)
	}
	sb := &sandboxv1beta1.Sandbox{}
	if err := rt.e2bKube.Get(ctx, objectKey(c.namespace, cl.Status.Sandbox.Name), sb); err != nil {
		return nil, nil, e2bKubeError(err, "reading Sandbox "+cl.Status.Sandbox.Name)
	}
	if !claimOwns(sb, cl.UID) {
		return nil, nil, errorf(http.StatusNotFound, "sandbox %s not found: its Kubernetes Sandbox is gone", id)
	}
	return cl, sb, nil
}

// e2bDetailOf describes a claim as E2B lists sandboxes; its state comes from its sandbox in the
// router's cache (the caller has listed the claim already).
func (rt *Router) e2bDetailOf(ctx context.Context, cl *extv1beta1.SandboxClaim) e2bDetail {
	d := e2bDetail{TemplateID: claimTemplate(cl), SandboxID: cl.Name, ClientID: e2bClientID, StartedAt: cl.CreationTimestamp.UTC(),
		EnvdVersion: contract.E2BEnvdVersion, Metadata: e2bMetadata(cl), State: e2bRunning, CPUCount: 1, MemoryMB: 128}
	if lc := cl.Spec.Lifecycle; lc != nil && lc.ShutdownTime != nil {
		d.EndAt = lc.ShutdownTime.UTC()
	}
	if name := cl.Status.Sandbox.Name; name != "" {
		if sb, _ := rt.lookupSandbox(ctx, cl.Namespace, name); sb != nil && sb.Spec.OperatingMode == sandboxv1beta1.SandboxOperatingModeSuspended {
			d.State = e2bPaused
		}
	}
	return d
}

func claimTemplate(cl *extv1beta1.SandboxClaim) string {
	if cl.Spec.WarmPoolRef != nil {
		return cl.Spec.WarmPoolRef.Name
	}
	if cl.Spec.SandboxTemplateRef != nil {
		return cl.Spec.SandboxTemplateRef.Name
	}
	return ""
}

// waitE2BReady waits, in the router's cache, for the claim (by UID) to be Ready: E2B's create
// and resume answer once the sandbox runs. Its Sandbox's status must be of generation minGen or
// later (the resume's patch), so a Ready left from before a pause does not count.
func (rt *Router) waitE2BReady(ctx context.Context, claim *extv1beta1.SandboxClaim, minGen int64) (*extv1beta1.SandboxClaim, *httpError) {
	var cl *extv1beta1.SandboxClaim
	herr := rt.pollE2B(ctx, func(ctx context.Context) (bool, *httpError) {
		var herr *httpError
		if cl, herr = rt.lookupClaim(ctx, claim.Namespace, claim.Name); herr != nil {
			return false, herr
		}
		if cl == nil || cl.UID != claim.UID || !meta.IsStatusConditionTrue(cl.Status.Conditions, extv1beta1.ClaimConditionReady) {
			return false, nil
		}
		sb, _ := rt.lookupSandbox(ctx, cl.Namespace, cl.Status.Sandbox.Name)
		return sb != nil && claimOwns(sb, cl.UID) && sb.Spec.OperatingMode != sandboxv1beta1.SandboxOperatingModeSuspended &&
			sb.Status.ObservedGeneration >= minGen && meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxv1beta1.SandboxConditionReady), nil
	}, func() *httpError {
		why := "it was deleted"
		if cl != nil {
			why = "its conditions: " + claimConditionSummary(cl)
		}
		return errorf(http.StatusGatewayTimeout, "sandbox %s was not ready within %s (%s); it goes on starting", claim.Name, rt.cfg.WakeTimeout, why)
	})
	if herr != nil {
		return nil, herr
	}
	return cl, nil
}

// waitE2BGone waits until the router's cache has no claim of cl's UID.
func (rt *Router) waitE2BGone(ctx context.Context, cl *extv1beta1.SandboxClaim) *httpError {
	return rt.pollE2B(ctx, func(ctx context.Context) (bool, *httpError) {
		got, herr := rt.lookupClaim(ctx, cl.Namespace, cl.Name)
		return herr == nil && (got == nil || got.UID != cl.UID), herr
	}, func() *httpError {
		return errorf(http.StatusGatewayTimeout, "sandbox %s is being killed but its SandboxClaim was not gone within %s (finalizers?)", cl.Name, rt.cfg.WakeTimeout)
	})
}

func claimConditionSummary(cl *extv1beta1.SandboxClaim) string {
	c := meta.FindStatusCondition(cl.Status.Conditions, extv1beta1.ClaimConditionReady)
	if c == nil {
		return "no Ready condition yet"
	}
	return "Ready=" + string(c.Status) + " " + c.Reason + ": " + c.Message
}

// writeE2BSandbox answers E2B's Sandbox for a ready claim (as the router's cache holds it, whose
// spec is trimmed: hence templateID), with a new envd access token that lives until shutdown.
func (rt *Router) writeE2BSandbox(w http.ResponseWriter, r *http.Request, c *e2bCaller, code int, templateID string,
	cl *extv1beta1.SandboxClaim, shutdown *metav1.Time) *httpError {
	tok, herr := rt.e2bAccessToken(r.Context(), c, cl.Namespace, cl.Name, shutdown)
	if herr != nil {
		return herr
	}
	writeJSON(w, code, e2bSandbox{TemplateID: templateID, SandboxID: cl.Name, ClientID: e2bClientID,
		EnvdVersion: contract.E2BEnvdVersion, EnvdAccessToken: tok, Domain: rt.e2bDomain(r)})
	return nil
}

// e2bMinTokenTTL is the shortest lifetime of an envd access token: a sandbox whose timeout is
// about to pass still gets a token a command can be sent with.
const e2bMinTokenTTL = time.Minute

// e2bAccessToken mints the envd access token of claim ns/name for the caller, through
// mintClaimToken, so only a caller RBAC allows to create sandboxclaims/connect on it gets one.
// E2B's SDKs take the token on create, connect and getInfo and keep it, so it lives as long as
// the sandbox's timeout then (its claim's shutdownTime, when the claim and every token of it
// die), at least e2bMinTokenTTL and at most --claim-token-max-ttl. A sandbox whose timeout is
// extended later needs Sandbox.connect for a token that lasts as long (docs/e2b.md).
func (rt *Router) e2bAccessToken(ctx context.Context, c *e2bCaller, ns, name string, shutdown *metav1.Time) (string, *httpError) {
	now := rt.now()
	expiry := now.Add(rt.cfg.ClaimTokenMaxTTL)
	if shutdown != nil && shutdown.Before(&metav1.Time{Time: expiry}) {
		expiry = shutdown.Time
	}
	if floor := now.Add(min(e2bMinTokenTTL, rt.cfg.ClaimTokenMaxTTL)); expiry.Before(floor) {
		expiry = floor
	}
	tok, _, herr := rt.mintClaimToken(ctx, c.principal(), ns, name, expiry)
	if herr != nil {
		return "", errorf(herr.code, "the envd access token of sandbox %s: %s", name, herr.msg)
	}
	return tok, nil
}

// claimShutdown is the claim's shutdownTime, or nil.
func claimShutdown(cl *extv1beta1.SandboxClaim) *metav1.Time {
	if cl.Spec.Lifecycle == nil {
		return nil
	}
	return cl.Spec.Lifecycle.ShutdownTime
}

// decodeE2B reads a JSON body into v; an empty body leaves v as it is.
func decodeE2B(r *http.Request, v any) *httpError {
	err := json.NewDecoder(io.LimitReader(r.Body, e2bMaxBody)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		return errorf(http.StatusBadRequest, "the body is not the JSON expected: %v", err)
	}
	return nil
}

// e2bKubeError turns an API server's answer to the caller's request into E2B's status codes.
func e2bKubeError(err error, doing string) *httpError {
	code := http.StatusInternalServerError
	switch {
	case apierrors.IsNotFound(err):
		code = http.StatusNotFound
	case apierrors.IsUnauthorized(err):
		code = http.StatusUnauthorized
	case apierrors.IsForbidden(err):
		code = http.StatusForbidden
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		code = http.StatusConflict
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		code = http.StatusBadRequest
	case apierrors.IsTooManyRequests(err):
		code = http.StatusTooManyRequests
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code = http.StatusGatewayTimeout
	}
	return errorf(code, "%s: %v", doing, err)
}
