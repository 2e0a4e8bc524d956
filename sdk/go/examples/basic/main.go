// Command basic claims a sandbox from a warm pool, runs a command in it, and releases it.
//
//	cd sdk/go && go run ./examples/basic -pool python -namespace default
//
// The kubeconfig is read as kubectl reads it (--kubeconfig, $KUBECONFIG, ~/.kube/config, or the
// Pod's service account). Without -router (or $KUBOX_ROUTER_URL) the SDK port-forwards to
// kubox-router.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

func main() {
	ns := flag.String("namespace", "default", "namespace of the claim")
	pool := flag.String("pool", "python", "SandboxWarmPool to claim from")
	router := flag.String("router", os.Getenv(kubox.RouterURLEnv), "kubox-router URL (default: port-forward)")
	conn := flag.String("connection", "", `"" (auto), "router", "direct" or "port-forward"`)
	token := flag.String("token", os.Getenv("KUBOX_TOKEN"), "bearer token for the router (default: the kubeconfig's)")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := config.GetConfig()
	if err != nil {
		log.Fatal(err)
	}
	c, err := kubox.New(cfg, kubox.Options{Namespace: *ns, Connection: kubox.Connection(*conn), RouterURL: *router, Token: *token})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Close() }()

	sb, err := c.Claim(ctx, kubox.FromPool(*pool), kubox.WithTTL(30*time.Minute))
	if err != nil {
		log.Fatal(err) // e.g. errors.Is(err, kubox.ErrClaimFailed): the message says what to fix
	}
	defer func() {
		if err := sb.Close(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	fmt.Printf("claimed %s (claim %s)\n", sb, sb.ClaimName())

	res, err := sb.Run(ctx, "python3", "-c", "import platform; print(platform.python_version())")
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Printf("exit %d\nstdout: %s\nstderr: %s\n", res.ExitCode, res.Stdout, res.Stderr)
}
