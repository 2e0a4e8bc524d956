package router

import (
	"context"
	"net"
	"net/http"
	"strconv"

	"github.com/kubox-dev/kubox/api/contract"
	"github.com/kubox-dev/kubox/internal/audit"
	routeraudit "github.com/kubox-dev/kubox/internal/router/audit"
)

// newAudit builds the audit trail's queue and recorder (internal/router/audit) when the
// configuration has sinks; without them the recorder records nothing.
func (rt *Router) newAudit() error {
	if len(rt.cfg.AuditSinks) == 0 {
		rt.audit = routeraudit.New(nil, rt.now)
		return nil
	}
	q, err := audit.NewQueue(rt.cfg.AuditQueue, rt.log, rt.cfg.AuditSinks...)
	if err != nil {
		return err
	}
	rt.metrics.Registry.MustRegister(q.Collectors()...)
	rt.auditQueue, rt.audit = q, routeraudit.New(q, rt.now)
	return nil
}

// beginAudit starts the audit record of a request admitted to t (routeraudit.Recorder.Begin).
func (rt *Router) beginAudit(w http.ResponseWriter, r *http.Request, rte *route, t *target) (http.ResponseWriter, *http.Request, *routeraudit.Entry) {
	if !rt.audit.Enabled() {
		return w, r, nil
	}
	info := infoFrom(r.Context())
	_, p, _ := net.SplitHostPort(t.addr)
	port, _ := strconv.Atoi(p)
	// envd's port is envd's by contract on every route (E2B hosts add its token; another route
	// may carry one the client has), so its calls are read whichever way they came.
	kind := audit.RoutePort
	switch {
	case port == contract.E2BEnvdPort:
		kind = audit.RouteEnvd
	case t.agentToken != "":
		kind = audit.RouteAgent
	}
	claim := ""
	if rte.kind == kindClaim {
		claim = rte.name
	} else if ref := ownerClaim(t); ref != "" {
		claim = ref
	}
	return rt.audit.Begin(w, r, routeraudit.Request{Start: info.start, Principal: info.principal, Namespace: t.sandbox.Namespace,
		Sandbox: t.sandbox.Name, Claim: claim, Route: kind, Port: port, Path: rte.path})
}

// ownerClaim is the name of the SandboxClaim that controls t's sandbox, or "".
func ownerClaim(t *target) string {
	for _, ref := range t.sandbox.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "SandboxClaim" {
			return ref.Name
		}
	}
	return ""
}

// closeAudit writes the audit records still queued once the server has stopped: it waits for
// the requests in flight to end, then for the queue to reach its sinks, for at most a quarter of
// ShutdownTimeout together (7.5 s by default: with the server's 30 s, within the router Pod's
// terminationGracePeriodSeconds of 40 s).
func (rt *Router) closeAudit() {
	if rt.auditQueue == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), rt.cfg.ShutdownTimeout/4)
	defer cancel()
	if err := rt.audit.Wait(ctx); err != nil {
		rt.log.Error("Stopping the audit trail", "error", err)
	}
	if err := rt.auditQueue.Close(ctx); err != nil {
		rt.log.Error("Stopping the audit trail", "error", err)
	}
}
