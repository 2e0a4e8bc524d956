package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

type lifecycleOptions struct {
	target
	wait       bool
	keepMemory bool
}

func newSuspend(g *globalOptions) *cobra.Command {
	return newLifecycle(g, sandboxv1beta1.SandboxOperatingModeSuspended, &cobra.Command{
		Use:   "suspend NAME",
		Short: "Suspend a sandbox: stop its Pod and keep its volumes",
		Long: `Suspend the Sandbox NAME (with --claim, the sandbox of the claim NAME): set its
spec.operatingMode to Suspended, so the controller deletes its Pod and keeps the Sandbox, its
Service and its volumes, and wait until the Pod is gone. kubox resume starts it again.

With --keep-memory (gVisor sandboxes) the memory is kept too: the controller checkpoints the
running sandbox (processes, memory, open files) before it deletes the Pod, and kubox resume
continues from there. When the memory cannot be kept the sandbox is suspended without it and
kubox suspend fails with the reason.`,
		Example: `  kubox suspend python-x7k2q
  kubox suspend python-x7k2q --keep-memory
  kubox suspend --claim kubox-x7k2 --wait=false`,
	})
}

func newResume(g *globalOptions) *cobra.Command {
	return newLifecycle(g, sandboxv1beta1.SandboxOperatingModeRunning, &cobra.Command{
		Use:   "resume NAME",
		Short: "Resume a suspended sandbox and wait until it is Ready",
		Long: `Resume the Sandbox NAME (with --claim, the sandbox of the claim NAME): set its
spec.operatingMode to Running, so the controller starts its Pod again, and wait until the sandbox
is Ready (at most --ready-timeout). Files outside its volumes are not kept across a suspension.`,
		Example: `  kubox resume python-x7k2q
  kubox resume --claim kubox-x7k2 --ready-timeout 5m`,
	})
}

// newLifecycle completes cmd (its name and help) as the command that sets a sandbox's
// operatingMode to mode: suspend or resume.
func newLifecycle(g *globalOptions, mode sandboxv1beta1.SandboxOperatingMode, cmd *cobra.Command) *cobra.Command {
	o := &lifecycleOptions{}
	cmd.Args = cobra.ExactArgs(1)
	cmd.ValidArgsFunction = completeNames(g, &o.target, 1)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.setMode(cmd, g, args[0], mode)
	}
	o.addFlags(cmd)
	if mode == sandboxv1beta1.SandboxOperatingModeSuspended {
		cmd.Flags().BoolVar(&o.keepMemory, "keep-memory", false,
			"keep the sandbox's memory (spec.suspendPolicy.keepMemory; gVisor only): resume continues its processes")
	}
	return cmd
}

func (o *lifecycleOptions) addFlags(cmd *cobra.Command) {
	o.addFlag(cmd.Flags())
	cmd.Flags().BoolVar(&o.wait, "wait", true, "wait until the sandbox is suspended (its Pod gone) or Ready again")
}

// setMode sets the sandbox's operatingMode to mode through the Go SDK (Sandbox.Suspend and
// Resume) and, with --wait, waits for the controller to get there, or fails as soon as the API's
// rule says it never will (an expired sandbox).
func (o *lifecycleOptions) setMode(cmd *cobra.Command, g *globalOptions, name string, mode sandboxv1beta1.SandboxOperatingMode) error {
	ctx := cmd.Context()
	_, ns, sbName, err := g.resolve(ctx, o.target, name)
	if err != nil {
		return err
	}
	s, err := g.connect()
	if err != nil {
		return err
	}
	defer s.close()
	sb, err := s.sdk.Lookup(ctx, ns, sbName)
	if err != nil {
		return explain(err, target{}, ns, sbName)
	}
	suspend := mode == sandboxv1beta1.SandboxOperatingModeSuspended
	verb := map[bool]string{true: "suspended", false: "resumed"}[suspend]
	w := &modeWait{verb: verb, state: "not seen yet"}
	opts := []kubox.ModeOption{kubox.NoWait()}
	if o.wait {
		w.p = startProgress(cmd.ErrOrStderr(), fmt.Sprintf("sandbox %s: waiting until it is %s", sbName, verb))
		opts = []kubox.ModeOption{kubox.WithSandboxProgress(w.seen)}
	}
	if suspend && o.keepMemory {
		opts = append(opts, kubox.KeepMemory())
	}
	if suspend {
		err = sb.Suspend(ctx, opts...)
	} else {
		err = sb.Resume(ctx, opts...)
	}
	if w.p != nil {
		w.p.finish("")
	}
	switch {
	case err != nil:
		return w.explain(err, ns, sbName, g.readyTimeout)
	case !o.wait:
		cmd.Printf("sandbox %s: %s requested\n", sbName, verb)
	case o.keepMemory:
		kept := meta.FindStatusCondition(sb.Object().Status.Conditions, sandboxv1beta1.SandboxConditionMemoryKept)
		cmd.Printf("sandbox %s suspended with its memory: %s\n", sbName, kept.Message)
	default:
		cmd.Printf("sandbox %s %s\n", sbName, verb)
	}
	return nil
}

// modeWait follows a suspend's or resume's wait: the latest version seen and its summary.
type modeWait struct {
	verb  string
	p     *progress
	last  *sandboxv1beta1.Sandbox
	state string
}

// seen reports a version of the sandbox, seen while waiting, to the progress.
func (w *modeWait) seen(sb *sandboxv1beta1.Sandbox) {
	w.last, w.state = sb, describeSandbox(sb)
	w.p.update("sandbox " + sb.Name + ": " + w.state)
}

// explain turns the SDK's error of a suspend or resume of ns/name into one that says what to do.
func (w *modeWait) explain(err error, ns, name string, timeout time.Duration) error {
	switch {
	case errors.Is(err, kubox.ErrMemoryNotKept):
		return fmt.Errorf("sandbox %s is suspended without its memory: %s", name, sandboxv1beta1.MemoryNotKept(w.last))
	case errors.Is(err, kubox.ErrTimeout):
		return fmt.Errorf("sandbox %s in namespace %s is still %s after %s: look at kubox get %s and its events (kubectl describe sandbox %s), or wait longer with --ready-timeout",
			name, ns, w.state, timeout, name, name)
	case errors.Is(err, kubox.ErrNotReady) && w.last != nil:
		return fmt.Errorf("sandbox %s in namespace %s will not be %s: %s; it will not recover by itself: claim a new sandbox (kubox claim) and delete this one (kubox delete %s, or kubox delete --claim CLAIM for a claim's sandbox)",
			name, ns, w.verb, describeSandbox(w.last), name)
	}
	return err
}

// describeSandbox summarizes a sandbox's Ready and, while suspending, Suspended conditions.
func describeSandbox(sb *sandboxv1beta1.Sandbox) string {
	s := describeConditions(sb.Status.Conditions)
	if c := meta.FindStatusCondition(sb.Status.Conditions, sandboxv1beta1.SandboxConditionSuspended); c != nil &&
		c.Reason != sandboxv1beta1.SandboxReasonNotSuspended {
		s += "; " + c.Reason
	}
	return s
}

func newDelete(g *globalOptions) *cobra.Command {
	o := &target{}
	cmd := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete sandboxes, or with --claim release claims",
		Long: `Delete the Sandboxes called NAME, or with --claim the SandboxClaims called NAME, which
releases them: the claim's sandbox goes with it (warm-pool sandboxes are not returned to the pool).

NAME is a Sandbox unless --claim is given, as in exec, cp, suspend, resume, logs and get. A
Sandbox that a claim holds is not deleted on its own (the claim would report it missing): kubox
says which claim to delete instead.`,
		Example: `  # Release a claim and its sandbox
  kubox delete --claim kubox-x7k2

  # Delete sandboxes created without a claim
  kubox delete scratch-1 scratch-2`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeNames(g, o, -1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return deleteAll(cmd, g, *o, args)
		},
	}
	o.addFlag(cmd.Flags())
	return cmd
}

// deleteAll deletes every name, going on after a failure, and reports every failure.
func deleteAll(cmd *cobra.Command, g *globalOptions, t target, names []string) error {
	ctx := cmd.Context()
	c, ns, err := g.clientIn()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if err := deleteOne(ctx, c, t, ns, name); err != nil {
			errs = append(errs, err)
			continue
		}
		cmd.Printf("%s %s deleted\n", t.kind(), name)
	}
	return errors.Join(errs...)
}

func deleteOne(ctx context.Context, c client.Client, t target, ns, name string) error {
	if t.claim {
		claim, err := getClaim(ctx, c, ns, name)
		if err != nil {
			return err
		}
		return apiError(c.Delete(ctx, claim, client.Preconditions{UID: &claim.UID}), "claim", ns, name)
	}
	sb, err := getSandbox(ctx, c, ns, name)
	if err != nil {
		return err
	}
	if claim := claimOf(sb); claim != "" {
		return fmt.Errorf("sandbox %s belongs to claim %s: release the claim with kubox delete --claim %s", name, claim, claim)
	}
	return apiError(c.Delete(ctx, sb, client.Preconditions{UID: &sb.UID}), "sandbox", ns, name)
}
